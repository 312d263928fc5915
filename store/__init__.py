"""The PostgreSQL store (asyncpg): migrations, sessions, the conversation log, business tables and the write gate."""

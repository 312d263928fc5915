"""Model servers: one plain class per deployment, constructible and testable without Ray."""

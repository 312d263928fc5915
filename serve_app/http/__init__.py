"""The HTTP API: routes by feature (chat, media, REST, OpenAI-compatible, demo), assembled by `create_api`."""

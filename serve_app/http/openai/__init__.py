"""The OpenAI-compatible `/v1` endpoints: `api_router` (thin routes) over `serving` (the logic)."""

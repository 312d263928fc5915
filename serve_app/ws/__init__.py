"""The WebSocket transport of the conversation (seed 002): the route and its frames; the stages are serve_app/agents."""

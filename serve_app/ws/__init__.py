"""The WebSocket conversation (seed 002): the route, the main agent, its frames and its replayable outbox."""

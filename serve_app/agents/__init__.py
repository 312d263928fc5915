"""The main agent (seed 002), shared by the WebSocket and HTTP chat: perception, execution over the agent runner,
the write gate and the replayable log of each turn's events."""

"""The Baton engine: the turn pipeline as plain async Python (no Ray import)."""

"""The LLM side of the engine (seed 004). Modules that need no model: prompts (per-pack system prompts), hooks
(the chain around each call) and compaction (fitting the context to a budget). Import submodules directly."""

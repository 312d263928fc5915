"""Wire types (pydantic only, no logic), one module per boundary."""

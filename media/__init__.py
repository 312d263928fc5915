"""Media objects: keys and source URLs, the object store backends, and upload inspection (type from bytes, limits)."""

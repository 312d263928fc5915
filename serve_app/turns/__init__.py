"""A turn on the serving side: admission, then the store-backed run (lease, engine, commit) inside its deadline."""

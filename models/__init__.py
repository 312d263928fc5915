"""Model building and loading: encoder bootstrap, head training, retrieval index, artifacts."""

"""The API documents: OpenAPI additions (errors, auth) and the AsyncAPI of the WebSocket."""

"""The serving layer: Ray Serve deployments, the HTTP ingress, the app builder and the launcher."""

"""Running Baton: the launcher, its reaper, the KubeRay renderer, ports and node environment."""

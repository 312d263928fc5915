"""Baton's settings: one validated `Settings` built once at start-up from the YAML in this folder, a deployment's
overrides and the environment (`load_settings`), then passed to whatever needs it."""

from config.budgets import ESCALATED, MEDIA_STAGE, STAGES, Budgets
from config.settings import CONFIG_DIR, Settings, load_settings, merged

__all__ = ["CONFIG_DIR", "ESCALATED", "MEDIA_STAGE", "STAGES", "Budgets", "Settings", "load_settings", "merged"]

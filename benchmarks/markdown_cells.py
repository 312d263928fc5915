"""The markdown report's table cells: a distribution's percentile, a value, a spread, a load level's unit."""

from __future__ import annotations


def dist_cell(dist: dict | None, key: str) -> str:
    return "–" if not dist else f"{dist[key]:g}"


def value_cell(value, fmt: str = "g") -> str:
    return "–" if value is None else format(value, fmt)


def spread_cell(x: dict | None) -> str:
    return "–" if not x else f"{x['median']} [{x['min']}–{x['max']}]"


def level_unit(process: str) -> str:
    return "concurrent sessions" if process == "closed" else "turns/s"

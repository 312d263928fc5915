"""What every standalone benchmark records about its run and how it writes its results (JSON, markdown, a figure)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def provenance() -> dict:
    """The machine, the load at the end, the commit measured and when."""
    return {
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_1m": round(os.getloadavg()[0], 2),
        },
        "git_commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write(
    out: Path, name: str, result: dict, markdown: Callable[[dict], str], figure: Callable[[dict, Path], None]
) -> str:
    """`name`.json, `name`.md and the figure under `out`; returns the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    text = markdown(result)
    (out / f"{name}.md").write_text(text, encoding="utf-8")
    figure(result, out)
    return text

"""`python -m benchmarks.two_apps`: one pack served alone against both packs in one cluster (`BATON_APPS=all`).

Three runs, each in a process of its own on a throwaway embedded PostgreSQL, started from `config/serve_local.yaml`
as `make run` starts it: cockpit alone, timeflow alone, both. Each measures the start (launcher start to every app's
/health green: every stage warmed), the idle memory after `--settle` seconds (RSS and PSS of every process of the
run — the driver, Ray's own, the Serve controller and proxy, HAProxy and each replica — the database left out, the
same in each), and the intent of held-out turns over HTTP: unstudied sets of fresh phrasings (never used to build or
tune a pack), every `--every`th row, each row a first turn of its own user. Writes `results.json`, `report.md` and
`memory.png` under `--out`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "two_apps"
DATA = ROOT / "benchmarks" / "data"
# unstudied sets (docs/intent-quality.md, "Current figures"): never read to change a pack
HELD_OUT = {"cockpit": DATA / "phrasings_cockpit_20.jsonl", "timeflow": DATA / "phrasings_timeflow_16.jsonl"}
SYSTEMS = {"cockpit": {"BATON_PACK": "cockpit"}, "timeflow": {"BATON_PACK": "timeflow"}, "both": {"BATON_APPS": "all"}}


def held_out(pack: str, every: int) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in HELD_OUT[pack].read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(r["text"], r["intent"]) for r in rows[::every]]


def run_processes() -> list[Any]:
    """This process and every process it started, the embedded PostgreSQL's excepted."""
    import psutil

    me = psutil.Process()
    return [me] + [p for p in me.children(recursive=True) if "postgres" not in p.name()]


def memory() -> dict[str, Any]:
    """RSS and PSS (MiB) of the run's processes, summed and per process title (a replica's names its app and
    deployment: `ray::ServeReplica:cockpit:Orchestrator`)."""
    import psutil

    by_title: dict[str, dict[str, float]] = {}
    for proc in run_processes():
        try:
            info = proc.memory_full_info()
            title = (proc.cmdline() or [proc.name()])[0].split(" ")[0] or proc.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        title = Path(title).name if title.startswith("/") else title
        entry = by_title.setdefault(title, {"processes": 0, "rss_mib": 0.0, "pss_mib": 0.0})
        entry["processes"] += 1
        entry["rss_mib"] += info.rss / 2**20
        entry["pss_mib"] += info.pss / 2**20
    rounded = {t: {k: round(v, 1) for k, v in e.items()} for t, e in sorted(by_title.items())}
    return {
        "rss_mib": round(sum(e["rss_mib"] for e in by_title.values()), 1),
        "pss_mib": round(sum(e["pss_mib"] for e in by_title.values()), 1),
        "processes": sum(int(e["processes"]) for e in by_title.values()),
        "by_title": rounded,
    }


def score(url: str, pack: str, rows: list[tuple[str, str]]) -> dict[str, Any]:
    import httpx

    answers = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for n, (text, gold) in enumerate(rows):
            t0 = time.perf_counter()
            resp = client.post("/api/v1/agent/chat", json={"user_id": f"two-apps-{pack}-{n}", "text": text})
            body = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else {}
            answers.append(
                {
                    "text": text,
                    "expected": gold,
                    "answered": body.get("intent"),
                    "status": resp.status_code,
                    "error": (body.get("error") or {}).get("code"),
                    "degraded": body.get("timings", {}).get("degraded", []),
                    "wall_ms": round((time.perf_counter() - t0) * 1000, 1),
                }
            )
    right = sum(a["answered"] == a["expected"] for a in answers)
    walls = sorted(a["wall_ms"] for a in answers)
    return {
        "rows": len(answers),
        "right": right,
        "top1": round(right / max(1, len(answers)), 4),
        "degraded_turns": sum(bool(a["degraded"]) for a in answers),
        "non_200": sum(a["status"] != 200 for a in answers),
        "wall_ms_p50": walls[len(walls) // 2] if walls else None,
        "errors": [a for a in answers if a["answered"] != a["expected"]],
        "answers": [a["answered"] for a in answers],
    }


def one(system: str, args: argparse.Namespace) -> dict[str, Any]:
    """One run: start, settle, measure, score, stop."""
    from serve_app.ops import launcher
    from store.embedded import EmbeddedPostgres

    [port] = launcher.free_ports(1)
    database = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="baton-two-apps-pg-")) / "pgdata")
    inherited = {k: v for k, v in os.environ.items() if k not in ("BATON_APPS", "BATON_PACK")}
    env = {**inherited, **SYSTEMS[system], "DATABASE_URL": database.start()}
    config = launcher.load_serve_config(ROOT / "config" / "serve_local.yaml", env, port=port)
    apps = launcher.route_prefixes(config)
    try:
        t0 = time.monotonic()
        launcher.start(config, env)
        reason = launcher.wait_until_healthy(port, timeout_s=args.timeout, apps=apps)
        start_s = time.monotonic() - t0
        time.sleep(args.settle)
        idle = memory()
        scores = {}
        for app in config["applications"]:
            pack = app["args"]["pack"]
            url = f"http://127.0.0.1:{port}{app.get('route_prefix', '/').rstrip('/')}"
            scores[pack] = score(url, pack, held_out(pack, args.every))
    finally:
        launcher.stop(port)
        database.stop()
        shutil.rmtree(database.pgdata.parent, ignore_errors=True)
    started = {"start_s": round(start_s, 1), "degraded_at_start": reason}
    return {"system": system, "apps": apps, **started, **idle, "scores": scores}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.two_apps", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--every", type=int, default=5, help="score every Nth held-out row")
    parser.add_argument("--settle", type=float, default=20.0, help="idle seconds before memory is read")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a start may take")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="which runs, in order")
    parser.add_argument("--one", choices=sorted(SYSTEMS), help=argparse.SUPPRESS)  # a run, in its own process
    parser.add_argument("--json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        args.json.write_text(json.dumps(one(args.one, args), ensure_ascii=False), encoding="utf-8")
        return 0
    runs = []
    for system in args.systems.split(","):
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            cmd = [sys.executable, "-m", "benchmarks.two_apps", "--one", system, "--json", out.name]
            cmd += ["--every", str(args.every), "--settle", str(args.settle), "--timeout", str(args.timeout)]
            print(f"two_apps: {system} …", flush=True)
            done = subprocess.run(cmd, cwd=ROOT, check=False)
            text = Path(out.name).read_text(encoding="utf-8")
            failed = {"system": system, "error": done.returncode}
            runs.append(json.loads(text) if done.returncode == 0 and text else failed)
    result = {
        "benchmark": "one pack alone vs both packs in one cluster (config/serve_local.yaml, BATON_APPS=all)",
        "runs": runs,
        "every": args.every,
        "settle_s": args.settle,
        "held_out": {p: str(path.relative_to(ROOT)) for p, path in HELD_OUT.items()},
        "machine": {"cores": os.cpu_count(), "platform": platform.platform(), "loadavg_1m": os.getloadavg()[0]},
        "git_commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    from benchmarks.two_apps_report import write_report

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    write_report(result, args.out)
    print((args.out / "report.md").read_text(encoding="utf-8"))
    return 0


def agreement(alone: list[str | None], both: list[str | None]) -> float:
    """The share of rows answered the same intent alone and in both."""
    same = Counter(a == b for a, b in zip(alone, both, strict=True))
    return round(same[True] / max(1, len(alone)), 4)


if __name__ == "__main__":
    sys.exit(main())

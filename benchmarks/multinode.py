"""`python -m benchmarks.multinode`: Baton on a Ray cluster of a head and two worker nodes (this machine), a model
replica killed and then a worker node lost, under a steady open-loop load of turns.

The cluster (benchmarks/local_cluster.py) deploys config/serve_multinode.yaml: the ingress on the head, one NLU
replica on each worker. Turns arrive at `--rate` (Poisson, single-intent commands from the pack's training split)
through every phase: steady; an NLU replica's process killed (Serve must replace it); settled; a worker node's
processes all killed at once (its replicas must come back on the remaining worker); settled. Per phase it counts
turns answered, degraded and over budget, shed (503 with Retry-After), any other 5xx, and lost (no HTTP answer),
with client p50/p99; per fault the seconds until full health (every deployment back to its replica count on live
nodes and /health green). Writes JSON, markdown and a figure under benchmarks/results/multinode/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import aiohttp
import psutil

from benchmarks.driver import Sample, send_turn
from benchmarks.local_cluster import HEAD, LocalCluster, Replica, wait_for
from benchmarks.multinode_report import figure, markdown, summarize
from benchmarks.scenario import Turn
from benchmarks.systems import BATON_ENV

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "config" / "serve_multinode.yaml"
MODELS = "NLU"


class Load:
    """Open-loop turns at `rate` per second until stopped; each sample is tagged with the phase it was sent in."""

    def __init__(self, url: str, texts: list[str], rate: float, seed: int) -> None:
        self.url, self.texts, self.rate = url, texts, rate
        self.rng = random.Random(seed)
        self.phase = "steady"
        self.samples: list[tuple[str, Sample]] = []
        self.t0 = time.perf_counter()
        self._stop = asyncio.Event()

    async def run(self) -> None:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(
            base_url=self.url, connector=connector, timeout=aiohttp.ClientTimeout(total=30)
        ) as session:
            tasks, n = [], 0
            while not self._stop.is_set():
                tasks.append(asyncio.create_task(self._one(session, n)))
                n += 1
                try:
                    await asyncio.wait_for(self._stop.wait(), self.rng.expovariate(self.rate))
                except TimeoutError:
                    pass
            await asyncio.gather(*tasks)

    async def _one(self, session: aiohttp.ClientSession, n: int) -> None:
        phase = self.phase
        turn = Turn(text=self.texts[n % len(self.texts)])
        sample, _ = await send_turn(
            session,
            kind="single",
            index=n,
            turn=turn,
            user_id=f"mn-{n % 32}",
            session_id=None,
            t_send=time.perf_counter() - self.t0,
            warmup=False,
        )
        self.samples.append((phase, sample))

    def stop(self) -> None:
        self._stop.set()


def fully_healthy(cluster: LocalCluster, want: dict[str, int], gone: set[str]) -> bool:
    """Every deployment has its replica count RUNNING on live nodes (none of `gone`) and /health is green."""
    import urllib.request

    running = [
        r for r in cluster.replicas() if r.state == "RUNNING" and r.replica_id not in gone and r.node in cluster.nodes
    ]
    if any(sum(r.deployment == name for r in running) < n for name, n in want.items()):
        return False
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{cluster.port}/health", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def placement(replicas: list[Replica]) -> dict[str, list[str]]:
    return {
        name: sorted(r.node for r in replicas if r.deployment == name and r.state == "RUNNING")
        for name in sorted({r.deployment for r in replicas})
    }


def replica_counts(config: dict) -> dict[str, int]:
    """Deployment name -> the replicas it runs when healthy (its num_replicas, or its autoscaling floor)."""
    return {
        d["name"]: int(d.get("num_replicas") or (d.get("autoscaling_config") or {}).get("min_replicas") or 1)
        for app in config["applications"]
        for d in app.get("deployments", [])
    }


async def scenario(cluster: LocalCluster, load: Load, *, steady_s: float, settle_s: float, recover_s: float) -> dict:
    want = replica_counts(cluster.config)
    if await asyncio.to_thread(wait_for, lambda: fully_healthy(cluster, want, set()), timeout_s=recover_s) is None:
        raise RuntimeError(
            f"the cluster never ran {want} replicas: {placement(await asyncio.to_thread(cluster.replicas))}"
        )
    runner = asyncio.create_task(load.run())
    peak = [memory_mb()]

    async def watch_memory() -> None:
        while not runner.done():
            peak.append(await asyncio.to_thread(memory_mb))
            await asyncio.sleep(2)

    watcher = asyncio.create_task(watch_memory())
    before = [r for r in await asyncio.to_thread(cluster.replicas) if r.state == "RUNNING"]
    faults = []
    await asyncio.sleep(steady_s)

    async def fault(phase: str, act, gone: set[str], what: str) -> None:
        load.phase = phase
        t = time.perf_counter() - load.t0
        await asyncio.to_thread(act)
        took = await asyncio.to_thread(wait_for, lambda: fully_healthy(cluster, want, gone), timeout_s=recover_s)
        live = [
            r for r in await asyncio.to_thread(cluster.replicas) if r.node in cluster.nodes and r.state == "RUNNING"
        ]
        faults.append(
            {
                "phase": phase,
                "what": what,
                "at_s": round(t, 3),
                "recovered_s": None if took is None else round(took, 2),
                "gone": sorted(gone),
                "placement_after": placement(live),
                "replicas_after": sorted(r.replica_id for r in live if r.deployment == MODELS),
            }
        )
        load.phase = f"after_{phase}"
        await asyncio.sleep(settle_s)

    # Serve usually spreads the two model replicas over the workers, but only the labels are a promise: the victim is
    # the one on worker-1 when there is one
    victim = min((r for r in before if r.deployment == MODELS), key=lambda r: r.node != "worker-1")
    await fault(
        "replica_kill",
        lambda: cluster.kill_replica(victim),
        {victim.replica_id},
        f"{MODELS} replica {victim.replica_id} on {victim.node} killed (SIGKILL, no restart by Ray)",
    )
    now = [r for r in await asyncio.to_thread(cluster.replicas) if r.state == "RUNNING" and r.node in cluster.nodes]
    lost_node = "worker-2" if any(r.deployment == MODELS and r.node == "worker-2" for r in now) else "worker-1"
    on_node = {r.replica_id for r in now if r.node == lost_node}
    await fault(
        "node_loss",
        lambda: cluster.remove_node(lost_node),
        on_node,
        f"{lost_node} removed: raylet and every process on it killed at once ({len(on_node)} replica(s))",
    )
    load.stop()
    await runner
    await watcher
    return {
        "placement_before": placement(before),
        "replicas_before": [asdict(r) for r in before],
        "faults": faults,
        "memory_mb": {"after_start": peak[0], "peak": max(peak)},
    }


def memory_mb() -> float:
    """Resident memory of this process and everything it started (the nodes, their workers, PostgreSQL)."""
    me = psutil.Process()
    total = 0
    for p in [me, *me.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return round(total / 2**20, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.multinode", description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=6.0, help="turns per second, open loop (Poisson)")
    parser.add_argument("--steady-s", type=float, default=20.0)
    parser.add_argument("--settle-s", type=float, default=15.0, help="load kept on after each recovery")
    parser.add_argument("--recover-s", type=float, default=180.0, help="give up waiting for full health after this")
    parser.add_argument(
        "--node-death-s", type=float, default=5.0, help="Ray's failure detector: a node missing this long is dead"
    )
    parser.add_argument("--quick", action="store_true", help="shorter phases (the test)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "multinode")
    args = parser.parse_args(argv)
    if args.quick:
        args.steady_s, args.settle_s, args.recover_s = 5.0, 5.0, 300.0

    from config.settings import load_settings
    from engine.pack import find_pack, load_pack
    from serve_app.ops import launcher
    from store.embedded import EmbeddedPostgres

    [port] = launcher.free_ports(1)
    env = {**os.environ, "BATON_PACK": "cockpit"}
    database = None
    if not env.get("DATABASE_URL"):
        database = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="baton-mn-pg-")) / "pgdata")
        env["DATABASE_URL"] = database.start()
    config = launcher.load_serve_config(CONFIG, env, port=port)
    settings = load_settings(ROOT / "config", env)
    pack = load_pack(find_pack("cockpit", shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
    texts = [text for text, intent in pack.train_rows() if not intent.startswith("__")]
    random.Random(7).shuffle(texts)
    # Ray's workers at the driver's priority, as the harness runs every Baton (benchmarks/systems.py): at Ray's
    # default nice 15 they get a sliver of the CPU whenever other work shares this machine
    os.environ.update(BATON_ENV)
    cluster = LocalCluster(config, env, node_death_after_s=args.node_death_s)
    load_at_start = round(os.getloadavg()[0], 2)
    started = time.perf_counter()
    try:
        cluster.start()
        launcher.wait_until_healthy(port, timeout_s=300)
        ready_s = time.perf_counter() - started
        load = Load(f"http://127.0.0.1:{port}", texts, args.rate, seed=11)
        run = asyncio.run(
            scenario(cluster, load, steady_s=args.steady_s, settle_s=args.settle_s, recover_s=args.recover_s)
        )
    finally:
        cluster.stop()
        if database is not None:
            database.stop()
            shutil.rmtree(database.pgdata.parent, ignore_errors=True)
    wall_s = time.perf_counter() - started
    result = {
        "benchmark": (
            "Baton on a head and two worker nodes: a model replica killed, then a worker node lost, under load"
        ),
        "config": str(CONFIG.relative_to(ROOT)),
        "nodes": {
            HEAD: "ingress (Orchestrator), Serve controller, HAProxy",
            "worker-1": "models",
            "worker-2": "models",
        },
        **run,
        "phases": summarize(load.samples, settings.budgets.turn_ms["text"]),
        "settings": {
            "rate": args.rate,
            "steady_s": args.steady_s,
            "settle_s": args.settle_s,
            "node_death_s": args.node_death_s,
            "cpus_per_node": cluster.cpus_per_node,
            "quick": args.quick,
        },
        "startup_s": round(ready_s, 1),
        "wall_s": round(wall_s, 1),
        "budget_ms": settings.budgets.turn_ms["text"],
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_1m_start": load_at_start,
            "loadavg_1m": round(os.getloadavg()[0], 2),
        },
        "git_commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (args.out / "raw").mkdir(parents=True, exist_ok=True)
    (args.out / "multinode.json").write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    (args.out / "multinode.md").write_text(markdown(result), encoding="utf-8")
    with (args.out / "raw" / "samples.jsonl").open("w", encoding="utf-8") as f:
        for phase, sample in sorted(load.samples, key=lambda p: p[1].t_send):
            f.write(json.dumps({"phase": phase, **asdict(sample)}, ensure_ascii=False) + "\n")
    figure(result, load.samples, args.out)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

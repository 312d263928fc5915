"""Baton on a real multi-node Ray cluster on this machine (a head and two worker nodes), through the benchmark's quick
run in a process of its own: the ingress on the head and the model replicas on the workers; a killed model replica
replaced and a lost worker node's replica rescheduled on the other, while turns keep being answered — none lost, no
5xx but shed 503s with Retry-After, degraded answers at their deadline. Also the report built from a result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.driver import LOST, Sample
from benchmarks.multinode_report import figure, markdown, outcome, summarize

pytestmark = pytest.mark.ray  # a head and two worker nodes, in a process of their own
ROOT = Path(__file__).resolve().parents[2]
# Server time over the turn budget an answer may show when this 2-core machine is starved by other work beside the
# cluster (load averages of 50 were seen: asyncio timers fire late); a turn left waiting on a dead replica instead of
# degrading at its stage deadline would show the seconds Ray takes to declare the replica dead.
STARVED_MARGIN_MS = 1000
# A commit is never cut off once its statement is sent (a saved turn must never be answered "nothing was saved"), so
# a database stall lengthens it past the budget: in one run the node loss's stall held three commits 2.0-2.9 s while
# the ingress answered sheds in 3-8 ms. Only the statement timeout bounds it.
COMMIT_BOUND_MS = 5000 + STARVED_MARGIN_MS  # config/baton.yaml store.command_timeout_s


@pytest.fixture(scope="module")
def run(cockpit, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("multinode")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("BATON_PACK", None)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.multinode", "--quick", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "multinode.json").read_text(encoding="utf-8"))
    samples = [json.loads(line) for line in (out / "raw" / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    answered = [s for s in samples if s.get("server_total_ms") is not None]
    result["slowest"] = max(answered, key=before_commit, default=None)
    result["slowest_commit"] = max(answered, key=lambda s: s["stages"].get("commit", 0.0), default=None)
    print(
        f"multi-node quick run: {result['wall_s']} s in all, {result['startup_s']} s to green, recoveries "
        f"{[f['recovered_s'] for f in result['faults']]} s, load average {result['machine']['loadavg_1m']}"
    )
    return result


def test_the_ingress_runs_on_the_head_and_the_model_replicas_on_the_workers(run):
    """What the node labels promise; Serve's scheduler usually also puts one model replica on each worker."""
    assert run["placement_before"]["Orchestrator"] == ["head"]
    assert len(run["placement_before"]["NLU"]) == 2 and set(run["placement_before"]["NLU"]) <= {"worker-1", "worker-2"}


def test_a_killed_model_replica_is_replaced_while_turns_are_answered(run):
    kill = run["faults"][0]
    assert kill["phase"] == "replica_kill" and kill["recovered_s"] is not None
    assert not set(kill["gone"]) & set(kill["replicas_after"]) and len(kill["replicas_after"]) == 2
    # on a worker, wherever Serve's scheduler put the replacement (beside the survivor, or where the dead one was)
    assert len(kill["placement_after"]["NLU"]) == 2 and set(kill["placement_after"]["NLU"]) <= {"worker-1", "worker-2"}
    during = run["phases"]["replica_kill"]
    assert during["answered"] > 0 and during["lost"] == 0 and during["other_5xx"] == 0


def test_a_lost_worker_nodes_replica_comes_back_on_the_other_worker(run):
    loss = run["faults"][1]
    assert loss["phase"] == "node_loss" and loss["recovered_s"] is not None
    assert loss["placement_after"] == {"NLU": ["worker-1", "worker-1"], "Orchestrator": ["head"]} or loss[
        "placement_after"
    ] == {"NLU": ["worker-2", "worker-2"], "Orchestrator": ["head"]}
    assert not set(loss["gone"]) & set(loss["replicas_after"])
    during = run["phases"]["node_loss"]
    assert during["answered"] > 0 and during["lost"] == 0 and during["other_5xx"] == 0


def test_no_turn_is_lost_failed_or_late_in_the_whole_run(run):
    total = run["phases"]["total"]
    assert total["sent"] == sum(run["phases"][p]["sent"] for p in run["phases"] if p != "total") > 50
    assert total["lost"] == 0 and total["other_5xx"] == 0 and total["client_4xx"] == 0
    slowest, commit = run["slowest"], run["slowest_commit"]
    assert before_commit(slowest) <= run["budget_ms"] + STARVED_MARGIN_MS, (
        f"a degraded turn reaches its commit by its deadline; the slowest: {slowest}, machine {run['machine']}"
    )
    assert commit["stages"]["commit"] <= COMMIT_BOUND_MS, f"the slowest commit: {commit}, machine {run['machine']}"
    assert total["answered"] + total["shed"] == total["sent"]


def before_commit(sample: dict) -> float:
    """Server time up to the commit: every phase the turn's deadline cuts off (auth, lease, models, planning)."""
    return sample["server_total_ms"] - sample["stages"].get("commit", 0.0)


def sample(t: float, status: int, *, degraded=(), retry_after=None, total_ms=50.0, wall_ms=60.0) -> Sample:
    return Sample(
        kind="single",
        turn=0,
        endpoint="chat",
        t_send=t,
        wall_ms=wall_ms,
        status=status,
        warmup=False,
        retry_after=retry_after,
        server_total_ms=total_ms if status == 200 else None,
        degraded=list(degraded),
    )


def test_outcomes_tell_a_shed_from_a_failure_and_a_loss():
    assert [
        outcome(s)
        for s in (
            sample(0, 200),
            sample(0, 200, degraded=["classifier"]),
            sample(0, 503, retry_after="1"),
            sample(0, 503),
            sample(0, 500),
            sample(0, 422),
            sample(0, LOST),
        )
    ] == ["ok", "degraded", "shed", "other_5xx", "other_5xx", "client_4xx", "lost"]


def test_the_report_and_figure_from_a_result(tmp_path):
    samples = [
        ("steady", sample(1, 200)),
        ("replica_kill", sample(6, 200, degraded=["encoder"], total_ms=700, wall_ms=710)),
        ("replica_kill", sample(7, 503, retry_after="1")),
        ("node_loss", sample(20, LOST)),
        ("after_node_loss", sample(30, 200)),
    ]
    phases = summarize(samples, 600)
    assert phases["replica_kill"] | {"wall_ms": None, "server_ms": None} == {
        "sent": 2,
        "answered": 1,
        "degraded": 1,
        "over_budget": 1,
        "shed": 1,
        "other_5xx": 0,
        "client_4xx": 0,
        "lost": 0,
        "wall_ms": None,
        "server_ms": None,
    }
    assert phases["total"]["lost"] == 1 and phases["total"]["sent"] == 5
    result = {
        "benchmark": "b",
        "config": "config/serve_multinode.yaml",
        "git_commit": "0123456789",
        "measured_at": "now",
        "machine": {"cores": 2, "loadavg_1m": 3.0},
        "phases": phases,
        "budget_ms": 600.0,
        "startup_s": 20.0,
        "settings": {"rate": 6.0, "node_death_s": 5.0, "cpus_per_node": 2},
        "memory_mb": {"after_start": 4000, "peak": 4100},
        "placement_before": {"NLU": ["worker-1", "worker-2"], "Orchestrator": ["head"]},
        "faults": [
            {"phase": "replica_kill", "what": "killed", "at_s": 5.0, "recovered_s": 12.5, "placement_after": {}},
            {"phase": "node_loss", "what": "lost", "at_s": 18.0, "recovered_s": None, "placement_after": {}},
        ],
    }
    text = markdown(result)
    assert "| seconds to full health | 12.5 s | not within the wait |" in text
    assert "**1 lost**" in text and "| replica_kill | 2 | 1 | 1 | 1 | 1 | 0 | 0 | 0 | 710 | 710 | 710 |" in text
    path = figure(result, samples, tmp_path)
    assert path.exists() and path.stat().st_size > 10_000

"""A Ray cluster of a head and worker nodes on this machine (`ray.cluster_utils.Cluster`, as Ray's own tests run
one), with Baton deployed on it from a Serve config through the launcher's own path.

Each node is a raylet of its own with its own processes; they share this machine's address and disk. The head
carries the node labels the ingress selects, the workers those the model deployments select, so placement follows
the config as it would on KubeRay's groups. The cluster registers nowhere: its Ray temp folder is its own, so no
other `ray.init()` on the machine joins it. Nodes inherit this process's environment when they start, which is how
replicas get DATABASE_URL (never through the Serve config).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from config.environment import METRICS_DIR_ENV
from serve_app.args import INGRESS
from serve_app.ops import launcher

HEAD = "head"
# Ray gives a starting raylet 30 s (a fixed number) to register; a machine starved by other work can miss that
STARTS = 3


@dataclass
class Replica:
    deployment: str
    replica_id: str
    actor_name: str
    node: str  # head, worker-1, worker-2 ... (or the node id when it is none of ours)
    state: str


@dataclass
class LocalCluster:
    """`start()` brings the nodes up and deploys `config`; `stop()` tears everything down (also after a failure)."""

    config: dict[str, Any]
    env: dict[str, str]
    workers: int = 2
    cpus_per_node: int = 2
    node_death_after_s: float = 5.0  # Ray's failure detector: health_check_period 1 s x this many misses
    cluster: Any = None
    nodes: dict[str, Any] = field(default_factory=dict)  # role -> ray._private.node.Node
    _tmp: Path | None = None
    _saved_env: dict[str, str] | None = None  # this process's environment before start() changed it

    @property
    def port(self) -> int:
        return self.config["http_options"]["port"]

    def start(self) -> None:
        import ray
        from ray import serve

        for attempt in range(1, STARTS + 1):
            try:
                self._start_nodes()
                break
            except Exception as exc:  # Ray raises a bare Exception when a raylet misses its window
                if "timed out during startup" not in str(exc) or attempt == STARTS:
                    raise
                print(f"a Ray node missed its start-up window ({exc}); starting the cluster again", flush=True)
                self._discard_nodes()
        ray.init(address=self.cluster.address, log_to_driver=False)
        serve.start(
            http_options=self.config.get("http_options"),
            proxy_location=self.config.get("proxy_location"),
            logging_config=self.config.get("logging_config"),
        )
        launcher.start(self.config, self.env)  # Ray is up: this deploys the config's apps, nothing else

    def _start_nodes(self) -> None:
        from ray.cluster_utils import Cluster

        # a Ray temp folder of our own (short: Unix socket paths live under it); Cluster writes its address there
        self._tmp = Path(tempfile.mkdtemp(prefix="baton-mn-", dir="/tmp"))
        if self._saved_env is None:
            self._saved_env = dict(os.environ)
        os.environ["RAY_TMPDIR"] = str(self._tmp)
        variables = launcher.replica_environment(self.config, self.env)
        shutil.rmtree(variables[METRICS_DIR_ENV], ignore_errors=True)
        Path(variables[METRICS_DIR_ENV]).mkdir(parents=True, exist_ok=True)
        launcher.set_faults(self.config, "")
        os.environ.update(variables)  # every node started below inherits them, and so do its workers
        head_labels, worker_labels = role_labels(self.config)
        period_ms = 1000
        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": self.cpus_per_node,
                "labels": head_labels,
                "include_dashboard": False,
                "object_store_memory": 100 * 1024 * 1024,
                "_system_config": {
                    "health_check_period_ms": period_ms,
                    "health_check_initial_delay_ms": period_ms,
                    "health_check_failure_threshold": max(1, round(self.node_death_after_s * 1000 / period_ms)),
                },
            },
        )
        self.nodes[HEAD] = self.cluster.head_node
        for i in range(1, self.workers + 1):
            self.nodes[f"worker-{i}"] = self.cluster.add_node(
                num_cpus=self.cpus_per_node, labels=worker_labels, object_store_memory=100 * 1024 * 1024
            )

    def _discard_nodes(self) -> None:
        """After a failed start: every process of this cluster, including a node that never registered (they all
        name this cluster's own temp folder), stopped by its PID."""
        if self.cluster is not None:
            self.cluster.shutdown()
        for process in psutil.process_iter(["cmdline"]):
            if process.pid != os.getpid() and any(str(self._tmp) in arg for arg in process.info["cmdline"] or ()):
                try:
                    process.kill()
                except psutil.Error:
                    pass
        shutil.rmtree(self._tmp, ignore_errors=True)
        self.cluster, self.nodes = None, {}

    def replicas(self) -> list[Replica]:
        """Every replica of the app with the node it runs on, as Serve's controller reports it."""
        from ray.serve.context import _get_global_client

        details = _get_global_client().get_serve_details()
        roles = {node.node_id: role for role, node in self.nodes.items()}
        app = details.get("applications", {}).get(launcher.APP_NAME, {})
        return [
            Replica(
                name, r["replica_id"], r["actor_name"], roles.get(r.get("node_id"), r.get("node_id") or "?"), r["state"]
            )
            for name, deployment in app.get("deployments", {}).items()
            for r in deployment.get("replicas", [])
        ]

    def kill_replica(self, replica: Replica) -> None:
        """Kill the replica's actor process outright (no restart by Ray: Serve has to replace it)."""
        import ray
        from ray.serve._private.constants import SERVE_NAMESPACE

        ray.kill(ray.get_actor(replica.actor_name, namespace=SERVE_NAMESPACE), no_restart=True)

    def remove_node(self, role: str) -> None:
        """Kill every process of a worker node at once (a machine lost, not drained)."""
        self.cluster.remove_node(self.nodes.pop(role), allow_graceful=False)

    def stop(self) -> None:
        import ray

        try:
            launcher.stop(self.port)  # Serve (and its HAProxy), then this driver's Ray connection
        finally:
            if self.cluster is not None:
                self.cluster.shutdown()
            if ray.is_initialized():
                ray.shutdown()
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
            if self._saved_env is not None:  # the nodes' variables (secrets, metrics port) leave this process too
                os.environ.clear()
                os.environ.update(self._saved_env)
                self._saved_env = None


def role_labels(config: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """(head labels, worker labels): what the ingress selects goes to the head, what the model deployments select
    to the workers."""
    head: dict[str, str] = {}
    workers: dict[str, str] = {}
    for app in config["applications"]:
        for deployment in app.get("deployments", []):
            wanted = (deployment.get("ray_actor_options") or {}).get("label_selector", {})
            (head if deployment["name"] == INGRESS else workers).update(wanted)
    return head, workers


def wait_for(check, *, timeout_s: float, every_s: float = 0.25) -> float | None:
    """Seconds until `check()` is true, or None when it was not within `timeout_s`."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if check():
            return time.monotonic() - t0
        time.sleep(every_s)
    return None

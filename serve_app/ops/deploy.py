"""`python -m serve_app.ops.deploy kuberay --config config/serve_gpu.yaml`: render a Serve config's KubeRay RayService.

`kuberay` writes deploy/kuberay/rayservice.yaml (or `--out`, `-` for stdout) and, beside it, networkpolicy.yaml
(who may reach the pods) from the Serve config and the cluster spec (deploy/kuberay/cluster.yaml); `--check` writes
nothing and fails when a committed file differs from a fresh render. `kubectl apply -f deploy/kuberay/rayservice.yaml
-f deploy/kuberay/networkpolicy.yaml` deploys them beside their Secrets. `env` prints, as `export`
lines, Ray Serve's switches a config needs in the environment of every `ray start` of a cluster of your own and
Ray's token authentication (`RAY_AUTH_MODE=token`; no secret among them). README, "Laptop → multi-node → KubeRay".
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import yaml

from serve_app.args import AppArgs
from serve_app.ops.cluster_spec import ClusterSpec
from serve_app.ops.kuberay import KUBERAY_VERSION, pool_demand, render, render_network
from serve_app.ops.launcher import load_serve_config
from serve_app.ops.node_env import serve_switches

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "deploy" / "kuberay" / "cluster.yaml"
OUT = ROOT / "deploy" / "kuberay" / "rayservice.yaml"
NETWORK = "networkpolicy.yaml"  # beside the RayService's file


def rayservice(config: Path, cluster: Path = CLUSTER, apps: str = "") -> str:
    """The manifest text for `config` on `cluster` (`apps`: BATON_APPS, one application per pack), with a header
    naming its sources and the command."""
    spec = ClusterSpec.model_validate(yaml.safe_load(cluster.read_text(encoding="utf-8")))
    # the environment plays no part: the manifest is the same wherever it is rendered, and holds no secret
    serve_config = load_serve_config(config, {"BATON_APPS": apps} if apps else {})
    pool, replicas, margin = pool_demand(serve_config)
    sizing = (
        f"# PostgreSQL: the Orchestrators' pools open up to {pool} x {replicas} = {pool * replicas} connections, so "
        f"the\n# server needs max_connections >= {pool * replicas + margin} + its reserved connections (checked at "
        "start)\n"
    )
    return render(serve_config, spec, header=_header("RayService", config, cluster) + sizing)


def network_policies(config: Path, cluster: Path = CLUSTER, apps: str = "") -> str:
    """The NetworkPolicies' text for the RayService of `config` on `cluster`."""
    spec = ClusterSpec.model_validate(yaml.safe_load(cluster.read_text(encoding="utf-8")))
    serve_config = load_serve_config(config, {"BATON_APPS": apps} if apps else {})
    return render_network(serve_config, spec, header=_header("NetworkPolicies", config, cluster))


def _header(what: str, config: Path, cluster: Path) -> str:
    return (
        f"# KubeRay {KUBERAY_VERSION} {what} rendered from {_shown(config)} and {_shown(cluster)} by\n"
        f"#   python -m serve_app.ops.deploy kuberay --config {_shown(config)}\n"
        "# Do not edit: change the sources and render again "
        "(tests/serve_app/ops/test_kuberay.py keeps this in sync).\n"
    )


def _shown(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serve_app.ops.deploy", description=__doc__.splitlines()[0])
    targets = parser.add_subparsers(dest="target", required=True)
    kuberay = targets.add_parser("kuberay", help="a KubeRay RayService manifest")
    kuberay.add_argument("--config", type=Path, default=ROOT / "config" / "serve_gpu.yaml", help="the Serve config")
    kuberay.add_argument("--cluster", type=Path, default=CLUSTER, help="the cluster spec (image, Secret, pod groups)")
    kuberay.add_argument("--out", default=str(OUT), help="where to write the manifest; - for stdout")
    kuberay.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    kuberay.add_argument("--apps", default="", help="one application per pack: all, or packs separated by commas")
    env = targets.add_parser("env", help="the Serve switches every node's environment needs, as export lines")
    env.add_argument("--config", type=Path, default=ROOT / "config" / "serve_multinode.yaml", help="the Serve config")
    args = parser.parse_args(argv)

    if args.target == "env":
        settings = AppArgs.model_validate(load_serve_config(args.config, {})["applications"][0]["args"]).settings(
            environ={}
        )
        # Ray's token authentication on every node: the token itself is each node's ~/.ray/auth_token (0600), never
        # printed here (docs/deployment.md, "Multi-node")
        for name, value in {**serve_switches(settings), "RAY_AUTH_MODE": "token"}.items():
            print(f"export {name}={shlex.quote(value)}")
        return 0
    try:
        text = rayservice(args.config, args.cluster, args.apps)
        network = network_policies(args.config, args.cluster, args.apps)
    except (ValueError, OSError) as exc:
        print(f"cannot render: {exc}", file=sys.stderr)
        return 2
    if args.out == "-":
        sys.stdout.write(text + "---\n" + network)
        return 0
    files = {Path(args.out): text, Path(args.out).parent / NETWORK: network}
    if args.check:
        stale = [str(p) for p, t in files.items() if (p.read_text(encoding="utf-8") if p.exists() else "") != t]
        if stale:
            print(
                f"{', '.join(stale)} out of date: run python -m serve_app.ops.deploy kuberay --config {args.config}",
                file=sys.stderr,
            )
            return 1
        print(f"{args.out} and {NETWORK} are up to date")
        return 0
    for path, content in files.items():
        path.write_text(content, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

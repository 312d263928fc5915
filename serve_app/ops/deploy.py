"""`python -m serve_app.ops.deploy kuberay --config config/serve_gpu.yaml`: render a Serve config's KubeRay RayService.

`kuberay` writes deploy/kuberay/rayservice.yaml (or `--out`, `-` for stdout) from the Serve config and the cluster
spec (deploy/kuberay/cluster.yaml); `--check` writes nothing and fails when the committed file differs from a fresh
render. `kubectl apply -f deploy/kuberay/rayservice.yaml` deploys it beside its Secret. `env` prints, as `export`
lines, Ray Serve's switches a config needs in the environment of every `ray start` of a cluster of your own
(no secret among them). README, "Laptop → multi-node → KubeRay".
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import yaml

from serve_app.args import AppArgs
from serve_app.ops.kuberay import KUBERAY_VERSION, ClusterSpec, render
from serve_app.ops.launcher import load_serve_config
from serve_app.ops.node_env import serve_switches

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "deploy" / "kuberay" / "cluster.yaml"
OUT = ROOT / "deploy" / "kuberay" / "rayservice.yaml"


def rayservice(config: Path, cluster: Path = CLUSTER) -> str:
    """The manifest text for `config` on `cluster`, with a header naming its sources and the command."""
    spec = ClusterSpec.model_validate(yaml.safe_load(cluster.read_text(encoding="utf-8")))
    header = (
        f"# KubeRay {KUBERAY_VERSION} RayService rendered from {_shown(config)} and {_shown(cluster)} by\n"
        f"#   python -m serve_app.ops.deploy kuberay --config {_shown(config)}\n"
        "# Do not edit: change the sources and render again "
        "(tests/serve_app/ops/test_kuberay.py keeps this in sync).\n"
    )
    # the environment plays no part: the manifest is the same wherever it is rendered, and holds no secret
    return render(load_serve_config(config, {}), spec, header=header)


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
    env = targets.add_parser("env", help="the Serve switches every node's environment needs, as export lines")
    env.add_argument("--config", type=Path, default=ROOT / "config" / "serve_multinode.yaml", help="the Serve config")
    args = parser.parse_args(argv)

    if args.target == "env":
        settings = AppArgs.model_validate(load_serve_config(args.config, {})["applications"][0]["args"]).settings(
            environ={}
        )
        for name, value in serve_switches(settings).items():
            print(f"export {name}={shlex.quote(value)}")
        return 0
    try:
        text = rayservice(args.config, args.cluster)
    except (ValueError, OSError) as exc:
        print(f"cannot render: {exc}", file=sys.stderr)
        return 2
    if args.check:
        current = Path(args.out).read_text(encoding="utf-8") if Path(args.out).exists() else ""
        if current != text:
            print(
                f"{args.out} is out of date: run python -m serve_app.ops.deploy kuberay --config {args.config}",
                file=sys.stderr,
            )
            return 1
        print(f"{args.out} is up to date")
        return 0
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

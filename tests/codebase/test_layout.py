"""The codebase's own rules, read from the source: package layering, module size, where the environment is read,
how the app state is reached and where routes are defined."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("config", "engine", "protocol", "store", "media", "models", "deployments", "serve_app", "benchmarks")
MAX_LINES = 300
# the loader reads the environment once for the settings; the launcher writes it for the processes it starts; vLLM's
# CPU engine is configured only by variables, set in its own replica's process before it is imported
ENVIRONMENT_READERS = {
    "config/environment.py",
    "config/settings.py",
    "serve_app/ops/launcher.py",
    "deployments/vllm_engine.py",
}


def sources(*packages: str) -> list[Path]:
    return sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else ([node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
        )
        found |= {name.split(".")[0] for name in names}
    return found & set(PACKAGES)


def test_no_package_imports_one_that_imports_it_back():
    edges: dict[str, set[str]] = defaultdict(set)
    for pkg in PACKAGES:
        for path in sources(pkg):
            edges[pkg] |= imported_packages(path) - {pkg}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})) for nxt in edges[start])

    cycles = sorted(f"{a} -> {b}" for a in PACKAGES for b in edges[a] if reaches(b, a, {b}))
    assert not cycles, f"package cycles: {cycles}"


def test_the_engine_and_the_wire_types_import_no_serving_layer():
    for path in sources("engine", "protocol", "store", "config"):
        assert not imported_packages(path) & {"serve_app", "deployments", "models", "benchmarks"}, rel(path)
        assert "import ray" not in path.read_text(encoding="utf-8") and "from ray" not in path.read_text(
            encoding="utf-8"
        ), rel(path)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_over_300_lines(package):
    long = {rel(p): n for p in sources(package) if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these modules: {long}"


def test_the_environment_is_read_only_by_the_config_loader_and_the_launcher():
    pattern = re.compile(r"\bos\.(environ|getenv)\b|\bgetenv\(")
    readers = {rel(p) for p in sources(*PACKAGES[:-1]) if pattern.search(p.read_text(encoding="utf-8"))}
    assert readers <= ENVIRONMENT_READERS, (
        f"read the environment through config.load_settings: {sorted(readers - ENVIRONMENT_READERS)}"
    )


def test_the_app_state_is_reached_through_its_typed_accessor():
    pattern = re.compile(r"getattr\([^)]*\bstate\b")
    offenders = [rel(p) for p in sources("serve_app") if pattern.search(p.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_the_app_state_has_no_field_of_type_any():
    from dataclasses import fields

    from serve_app.state import AppState, ModelClients, Persistence

    for cls in (AppState, ModelClients, Persistence):
        untyped = [f.name for f in fields(cls) if "Any" in str(f.type)]
        assert not untyped and cls.__dataclass_params__.frozen, (cls.__name__, untyped)


def test_no_route_is_defined_inside_a_function():
    offenders = []
    for path in sources("serve_app"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    if (
                        inner is not node
                        and isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef)
                        and any(
                            isinstance(d, ast.Call)
                            and isinstance(d.func, ast.Attribute)
                            and d.func.attr in {"get", "post", "put", "delete", "patch", "websocket", "api_route"}
                            for d in inner.decorator_list
                        )
                    ):
                        offenders.append(f"{rel(path)}:{inner.lineno} {inner.name}")
    assert not offenders, offenders

"""Dependencies (issue 34, item 15): the floors in pyproject.toml are past the published advisories, and what installs
is requirements.lock, every pin with its hashes, installed with --require-hashes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
# the first release of each that no published advisory names
FIXED = {
    "python-multipart": "0.0.22",
    "starlette": "0.49.1",
    "pyjwt": "2.10.1",
    "pillow": "12.1.1",
    "jinja2": "3.1.6",
}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def locked() -> dict[str, tuple[Version, list[str]]]:
    """Each pinned package of the lock: its version and the hashes given with it."""
    pins: dict[str, tuple[Version, list[str]]] = {}
    current = None
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        match = PIN.match(line)
        if match:
            current = canonicalize_name(match[1])
            pins[current] = (Version(match[2]), [])
        elif current is not None and line.strip().startswith("--hash="):
            pins[current][1].append(line.strip().removesuffix("\\").strip())
        elif not line.startswith(" "):
            current = None
    return pins


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def requirements() -> list[Requirement]:
    meta = project()
    return [Requirement(r) for r in (*meta["dependencies"], *meta["optional-dependencies"]["test"])]


def test_every_pin_of_the_lock_has_a_sha256_hash():
    pins = locked()
    assert len(pins) > 100
    unhashed = [name for name, (_, hashes) in pins.items() if not hashes]
    assert not unhashed
    assert all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", h) for _, hashes in pins.values() for h in hashes)


def test_the_floors_are_past_the_advisories_in_pyproject_and_in_the_lock():
    floors = {canonicalize_name(r.name): r.specifier for r in requirements()}
    pins = locked()
    for name, fixed in FIXED.items():
        assert name in floors, f"{name} has no floor in pyproject.toml"
        assert not floors[name].contains(_before(fixed)), (name, str(floors[name]))
        assert pins[name][0] >= Version(fixed), (name, pins[name][0])


def _before(version: str) -> str:
    """A release just before `version` (its last part one lower), which the floor must refuse."""
    parts = [int(p) for p in version.split(".")]
    index = max(i for i, p in enumerate(parts) if p > 0)
    parts[index] -= 1
    return ".".join(str(p) for p in parts)


def test_the_lock_pins_every_dependency_within_its_range_and_torch_as_constraints_txt_says():
    pins = locked()
    for requirement in requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in the lock"
        assert requirement.specifier.contains(pins[name][0], prereleases=True), (name, pins[name][0])
    torch = Requirement((ROOT / "constraints.txt").read_text(encoding="utf-8").split()[0])
    assert torch.specifier.contains(pins["torch"][0]) and pins["torch"][0].local == "cpu"


def test_setup_installs_the_lock_with_hashes_and_the_project_alone():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "pip install -q --require-hashes -r $(LOCK)" in makefile
    assert "pip install -q --no-deps --no-build-isolation -e ." in makefile
    assert re.search(r"^lock:", makefile, re.M) and "--generate-hashes" in makefile

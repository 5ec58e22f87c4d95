"""Size of each layer of the TypeScript tree and the imports that cross layers, at a git revision (issue 13's numbers).

    python3 scripts/arch_stats.py [REV ...]      (default: HEAD; several revisions print one JSON line each)

Layers are the folders of src/ (lines of src/sim are given per part: sim/py, sim/model, sim/commands, sim/config and
the sim root) and baselines/. Lines are all lines of the .ts files (comments included). A cross-layer import is one relative import
statement from a file of one layer to a file of another; pairs counts the distinct (from, to) layer pairs.
"""

from __future__ import annotations

import json
import posixpath
import re
import subprocess
import sys

IMPORT = re.compile(r"""^\s*(?:import|export)\b[^'"]*?from\s+['"](\.[^'"]+)['"]|^\s*import\s+['"](\.[^'"]+)['"]""", re.M)


def layer(path: str) -> str | None:
    parts = path.split("/")
    if parts[0] == "baselines":
        return "baselines"
    if parts[0] != "src":
        return None
    if len(parts) == 2:
        return "index"
    if parts[1] == "sim":
        return f"sim/{parts[2]}" if len(parts) > 3 else "sim"
    return parts[1]


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def stats(rev: str) -> dict[str, object]:
    files = [f for f in git("ls-tree", "-r", "--name-only", rev, "src", "baselines").split() if f.endswith(".ts") and not f.endswith(".d.ts")]
    lines: dict[str, int] = {}
    crossing = 0
    pairs: set[tuple[str, str]] = set()
    for f in files:
        text = git("show", f"{rev}:{f}")
        a = layer(f)
        if a is None:
            continue
        lines[a] = lines.get(a, 0) + text.count("\n")
        for m in IMPORT.finditer(text):
            spec = m.group(1) or m.group(2)
            target = posixpath.normpath(posixpath.join(posixpath.dirname(f), spec))
            b = layer(target)
            # The parts of src/sim are one layer for this count (they import each other freely).
            if b is not None and b.split("/")[0] != a.split("/")[0]:
                crossing += 1
                pairs.add((a, b))
    return {
        "rev": git("rev-parse", "--short", rev).strip(),
        "lines": dict(sorted(lines.items())),
        "total_lines": sum(lines.values()),
        "cross_layer_imports": crossing,
        "layer_pairs": len(pairs),
    }


if __name__ == "__main__":
    for r in sys.argv[1:] or ["HEAD"]:
        print(json.dumps(stats(r)))

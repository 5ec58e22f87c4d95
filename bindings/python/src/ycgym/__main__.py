"""``python -m ycgym ARGS``: the ``ycgym`` command line of the server this package runs (bundled in wheels).

For example ``python -m ycgym run --policy greedy --seeds 1-10 --out runs/greedy``, ``python -m ycgym serve
--endpoint tcp://127.0.0.1:5555`` or ``python -m ycgym --help``. The server and Node.js are found as for
:class:`ycgym.LocalServer` (see :mod:`ycgym.server`), so a wheel install needs no Node on PATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

from .server import ServerStartError, find_server_command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: this process's arguments); returns its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        cmd = [*find_server_command(), *args]
    except ServerStartError as e:
        print(e, file=sys.stderr)
        return 2
    if argv is None and os.name == "posix":
        os.execv(cmd[0], cmd)  # the CLI takes this process over: signals, exit status and stdio are its own
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:  # the CLI got the same Ctrl-C and stops on its own
        return 130


if __name__ == "__main__":
    sys.exit(main())

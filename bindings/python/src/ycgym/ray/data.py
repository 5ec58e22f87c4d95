"""Written runs as ``ray.data`` datasets.

``ray.data`` has no reader for Arrow IPC *files* (its ``read_*`` functions cover Parquet, CSV, JSON, ...),
so :class:`YcgymFileDatasource` is a :class:`ray.data.datasource.FileBasedDatasource` that reads the files
``ycgym run`` and ``python -m ycgym.ray run`` write: Arrow IPC files (``.arrow``) record batch by record batch
(one batch per episode in trajectory files) and Parquet files (``.parquet``) row group by row group, so a
run written in either format reads the same way.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]
import ray.data
from ray.data.datasource import FileBasedDatasource

__all__ = ["YcgymFileDatasource", "read_trajectories", "read_episodes", "resolve_files"]

_FORMATS = (".arrow", ".parquet")


class YcgymFileDatasource(FileBasedDatasource):
    """Arrow IPC (``.arrow``) and Parquet (``.parquet``) files as a ``ray.data`` source."""

    _FILE_EXTENSIONS = ["arrow", "parquet"]

    def _open_input_source(self, filesystem: Any, path: str, **open_args: Any) -> pa.NativeFile:
        # Both formats keep their index at the end of the file: random access, not a sequential stream.
        f: pa.NativeFile = filesystem.open_input_file(path)
        return f

    def _read_stream(self, f: pa.NativeFile, path: str) -> Iterator[pa.Table]:
        if path.endswith(".parquet"):
            pf = pq.ParquetFile(f)
            for i in range(pf.num_row_groups):
                yield pf.read_row_group(i)
            return
        reader = pa.ipc.open_file(f)
        for i in range(reader.num_record_batches):
            yield pa.Table.from_batches([reader.get_batch(i)])


def resolve_files(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], table: str) -> list[str]:
    """The files of ``table`` (``trajectories`` or ``episodes``) named by ``paths``.

    Each entry is a run directory (its ``TABLE.arrow`` or ``TABLE.parquet``), a glob pattern (every match:
    directories as above, files as they are), a file, or a URI (``s3://...``: passed to Ray unchanged).
    Local paths come back absolute.
    """
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not items:
        raise ValueError("no paths given")
    out: list[str] = []
    for item in items:
        s = os.fspath(item)
        if "://" in s:
            out.append(s)
            continue
        matches = sorted(glob.glob(s, recursive=True)) if any(c in s for c in "*?[") else [s]
        if not matches:
            raise FileNotFoundError(f"{s}: no file or directory matches")
        for m in matches:
            # Absolute: read tasks run in worker processes whose working directory is not the caller's.
            p = Path(os.path.abspath(m))
            if p.is_dir():
                found = [p / f"{table}{ext}" for ext in _FORMATS if (p / f"{table}{ext}").is_file()]
                if not found:
                    raise FileNotFoundError(f"{p}: no {table}.arrow or {table}.parquet in this directory")
                out += [str(f) for f in found]
            elif p.is_file():
                if p.suffix not in _FORMATS:
                    raise ValueError(f"{p}: not an .arrow or .parquet file")
                out.append(str(p))
            else:
                raise FileNotFoundError(f"{p}: no such file or directory")
    return out


def read_trajectories(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], **read_args: Any) -> ray.data.Dataset:
    """The step rows of written runs as a :class:`ray.data.Dataset` (schema: ``ycgym.arrow.STEP_SCHEMA``).

    ``paths``: run directories, files, glob patterns (``runs/*``) or URIs, see :func:`resolve_files`.
    Extra keyword arguments go to :func:`ray.data.read_datasource` (e.g. ``override_num_blocks``). Like
    every ``ray.data`` read, block order is not kept unless ``DataContext.execution_options.preserve_order``
    is set: sort by ``run_id, episode_id, step`` when order matters.
    """
    ds: ray.data.Dataset = ray.data.read_datasource(YcgymFileDatasource(resolve_files(paths, "trajectories")), **read_args)
    return ds


def read_episodes(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], **read_args: Any) -> ray.data.Dataset:
    """The episode rows of written runs (one per episode) as a :class:`ray.data.Dataset`; see :func:`read_trajectories`."""
    ds: ray.data.Dataset = ray.data.read_datasource(YcgymFileDatasource(resolve_files(paths, "episodes")), **read_args)
    return ds

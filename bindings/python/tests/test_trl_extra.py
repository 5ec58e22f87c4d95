"""Without the ``[trl]`` extra, what ``ycgym.integrations.trl`` needs from it says what to install (the adapter itself
imports nothing of TRL's; tests_integrations/test_trl.py runs it with the extra)."""

from __future__ import annotations

import re
import sys

import pytest

from ycgym.integrations.trl import make_dataset


def test_make_dataset_without_datasets_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's TRL example calls make_dataset first; without the extra it said only ``No module named
    'datasets'``."""
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError, match=re.escape("pip install 'ycgym[trl]'")):
        make_dataset(range(1, 3))

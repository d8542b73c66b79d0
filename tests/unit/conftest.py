"""Fixtures shared by the unit tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An empty workspace folder, by its real path (what resolve_workspace gives)."""
    d = tmp_path / "ws"
    d.mkdir()
    return Path(os.path.realpath(d))

"""Fixtures of the `memory` command tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def repo(ws: Path) -> Path:
    """``ws`` (an empty folder) made a git work tree's root."""
    (ws / ".git").mkdir()
    return ws

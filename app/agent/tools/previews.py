"""Pieces of the previews the permission window shows of a call: a bounded number of lines, and
the current text of the file a write would change."""

from __future__ import annotations

import os
from pathlib import Path

from app.agent.tools.base import ToolError
from app.agent.tools.paths import resolve

__all__ = ["PREVIEW_LINES", "PREVIEW_READ_MAX", "current_text", "cut_lines"]

PREVIEW_LINES = 40
PREVIEW_READ_MAX = 1_000_000  # a larger file is not diffed: the preview says so


def cut_lines(lines: list[str], limit: int = PREVIEW_LINES) -> str:
    """The first ``limit`` lines, and how many more there were."""
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join([*lines[:limit], f"… {len(lines) - limit} more line(s)"])


def current_text(workspace: Path, raw: str) -> str | None:
    """The file's text if it is a regular file inside the workspace and small enough. Blocking."""
    try:
        r = resolve(workspace, raw)
    except ToolError:
        return None
    try:
        st = os.stat(r.real)
    except OSError:
        return None
    if not os.path.isfile(r.real) or st.st_size > PREVIEW_READ_MAX:
        return None
    try:
        with open(r.real, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None

"""The side panel's last cards, kept on disk so the next start shows them in its first frames.

The file, its stamp and when it may be written are app/services/panel_snapshot.py's; this module
says what of a panel state is kept: the visible cards of the last state built from the stores,
and the notes the stores decide (not the jobs, the "new" marks or the sync line).

Imports stdlib json, app.services.panel_snapshot and the panel's widget types only: it is read
before the stores' own imports (pydantic, PyYAML) are done.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TypedDict

from app.services.panel_snapshot import Stamp, StampedSnapshot, kept_snapshot
from memory.text.terminal import strip_terminal
from widgets.panel.memory_panel import PanelCard, PanelState

__all__ = ["MAX_CARDS", "PanelSnapshot", "read_snapshot", "recorder"]

log = logging.getLogger(__name__)

VERSION = 1
MAX_CARDS = 200  # per level: more than the panel shows on a screen
MAX_TEXT = 2000
_CARD_STR = ("type", "title", "summary", "filename", "author", "level")


class _CardJson(TypedDict):
    """A card as the snapshot file keeps it."""

    type: str
    title: str
    summary: str
    filename: str
    untrusted: bool
    stale: str | None
    author: str
    level: str


def _card_json(c: PanelCard) -> _CardJson:
    return {
        "type": c.type,
        "title": c.title,
        "summary": c.summary,
        "filename": c.filename,
        "untrusted": c.untrusted,
        "stale": c.stale,
        "author": c.author,
        "level": c.level,
    }


def encode(state: PanelState, stamp: Stamp, workspace: str) -> bytes:
    """The visible part of ``state``: its cards (capped), the notes the stores decide; not the
    jobs, the "new" marks or the sync line (the runtime decides those)."""
    body = {
        "version": VERSION,
        "workspace": workspace,
        "stamp": stamp,
        "project": [_card_json(c) for c in state.project[:MAX_CARDS]],
        "user": [_card_json(c) for c in state.user[:MAX_CARDS]],
        "conflicted": [_card_json(c) for c in state.conflicted[:MAX_CARDS]],
        "cut_note": state.cut_note,
        "project_note": state.project_note,
    }
    return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _text(value: object, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise ValueError("not a short string")
    return strip_terminal(value, keep_newlines=False)


def _card(raw: object) -> PanelCard:
    if not isinstance(raw, dict) or not isinstance(raw.get("untrusted"), bool):
        raise ValueError("not a card")
    t, title, summary, filename, author, level = (_text(raw.get(k)) or "" for k in _CARD_STR)
    return PanelCard(
        type=t,
        title=title,
        summary=summary,
        filename=filename,
        untrusted=raw["untrusted"],
        stale=_text(raw.get("stale"), optional=True),
        author=author,
        level=level,
    )


def _cards(raw: object) -> tuple[PanelCard, ...]:
    if not isinstance(raw, list) or len(raw) > MAX_CARDS:
        raise ValueError("not a card list")
    return tuple(_card(c) for c in raw)


def decode(data: bytes, stamp: Stamp, workspace: str) -> PanelState | None:
    """The snapshot's state when it is well formed and stamped ``stamp``; else None."""
    try:
        body = json.loads(data)
        if (
            not isinstance(body, dict)
            or body.get("version") != VERSION
            or body.get("workspace") != workspace
            or body.get("stamp") != stamp
        ):
            return None
        return PanelState(
            project=_cards(body.get("project")),
            user=_cards(body.get("user")),
            cut_note=_text(body.get("cut_note"), optional=True),
            project_note=_text(body.get("project_note"), optional=True),
            jobs=(),
            conflicted=_cards(body.get("conflicted")),
        )
    except (ValueError, TypeError, RecursionError):
        return None


class PanelSnapshot(StampedSnapshot[PanelState]):
    """Writes the panel's snapshot after each panel state built from the stores (in the build's
    thread), and reads it back while its stamp holds."""

    def encode(self, state: PanelState, stamp: Stamp, workspace: str) -> bytes:
        return encode(state, stamp, workspace)

    def decode(self, data: bytes, stamp: Stamp, workspace: str) -> PanelState | None:
        return decode(data, stamp, workspace)


def read_snapshot(home: Path | None, workspace: Path | str) -> PanelState | None:
    """The panel's last cards when nothing they were built from changed since; None otherwise
    (missing, unreadable, malformed, too large, or stamped otherwise). Never raises."""
    try:
        return PanelSnapshot(home, workspace).read()
    except Exception as e:  # a cache: whatever is wrong with it, the panel waits for the stores
        log.debug("panel snapshot not read: %s", e)
        return None


def recorder(home: Path | None, workspace: Path | str) -> PanelSnapshot:
    """The writer of a workspace's snapshot (one per home and workspace: it remembers what it
    wrote last, so an unchanged state is not written again)."""
    return kept_snapshot(PanelSnapshot, home, workspace)

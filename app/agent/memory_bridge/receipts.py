"""Receipts: what memory a turn used, kept in its ``turn_end`` record of the session log.

``{"shown": [...], "read": [...], "stale": [...]}``, each card as ``level/filename``:

- ``shown``: the cards of the index as it stood for the Run (the system prompt's at session
  start, or the index after the Run's ``<memory-update>`` block), in index order;
- ``read``: the cards ``read_memory`` read during the turn, sub-agents' reads included, in the
  order first read, each once;
- ``stale``: those of the shown and read cards that were stale then (a shown line's stale mark;
  the ``read_memory`` result's header for a read card);
- ``recalled`` (only when there were any): the cards the Run's ``<memory-recall>`` block named.

Every list is bounded by the index's own line limit, so a receipt stays small.
"""

from __future__ import annotations

from app.agent.tools import CardRead
from memory.constants import INDEX_MAX_LINES
from memory.store.index import INDEX_LINE_RE, PROJECT_HEADER, USER_HEADER

__all__ = ["RECEIPT_MAX", "Receipt", "shown_cards"]

RECEIPT_MAX = INDEX_MAX_LINES
_HEADERS = {PROJECT_HEADER: "project", USER_HEADER: "user"}


def shown_cards(index: str) -> tuple[list[str], list[str]]:
    """(every card of a merged index, the stale-marked ones), as ``level/filename``."""
    shown: list[str] = []
    stale: list[str] = []
    level: str | None = None
    for line in index.split("\n"):
        if line in _HEADERS:
            level = _HEADERS[line]
            continue
        m = INDEX_LINE_RE.match(line) if level is not None else None
        if m is None or len(shown) >= RECEIPT_MAX:
            continue
        key = f"{level}/{m.group('filename')}"
        shown.append(key)
        if m.group("stale"):
            stale.append(key)
    return shown, stale


class Receipt:
    """One turn's receipt, filled as the turn goes (only on the event loop: no lock)."""

    def __init__(self, shown_index: str = "") -> None:
        self.shown_index = shown_index
        self.recalled: list[str] = []
        self._read: dict[str, bool] = {}  # level/filename -> stale when read; insertion order

    def saw(self, card: CardRead) -> None:
        key = card.key
        if key in self._read:
            self._read[key] = self._read[key] or card.stale
        elif len(self._read) < RECEIPT_MAX:
            self._read[key] = card.stale

    @property
    def read(self) -> list[str]:
        return list(self._read)

    def record(self) -> dict[str, list[str]]:
        """The JSON-able receipt (parses the index: call it off the event loop)."""
        shown, stale = shown_cards(self.shown_index)
        seen = set(stale)
        stale += [key for key, was_stale in self._read.items() if was_stale and key not in seen]
        out = {"shown": shown, "read": list(self._read), "stale": stale}
        if self.recalled:  # the cards of the Run's <memory-recall> block
            out["recalled"] = list(self.recalled[:RECEIPT_MAX])
        return out

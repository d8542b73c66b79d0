"""Which cards the prompt's index keeps when they do not all fit.

Best first: pinned cards; then cards the session already shows (``keep``: the index of one
session stays stable, a read does not push another card out mid-session); then fresh before
stale; then corrections and preferences; then by use (reads, then last read); then by
``updated``, newest first; the filename breaks ties. The chosen lines are shown in file order
(memory/store/index.py); ``MEMORY.md`` on disk keeps every card, sorted by filename.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from memory.constants import NoteType
from memory.grounding.usage import CardUse
from memory.model import NoteMeta

__all__ = ["CardKey", "RankedCard", "rank_order"]

_FIRST_TYPES = frozenset({NoteType.CORRECTION_FEEDBACK, NoteType.USER_PREFERENCE})


class RankedCard(NamedTuple):
    """What ranking needs of one card of a section, its position in the list being its line's.
    ``rank_order`` takes any ``(filename, meta, stale)`` tuple: a 10,000-card index passes plain
    ones, made without a constructor call per card at every Run."""

    filename: str
    meta: NoteMeta | None
    stale: bool = False


CardKey = tuple[str, NoteMeta | None, bool]


def rank_order(
    cards: Sequence[CardKey],
    use: Mapping[str, CardUse],
    keep: Collection[str] = (),
) -> list[int]:
    """The positions of ``cards`` best first. ``use``: filename -> reads; ``keep``: filenames
    the session's index already shows."""
    kept = keep if isinstance(keep, set | frozenset) else set(keep)

    def key(i: int) -> tuple[int, int, int, int, int, int, int, str]:
        name, meta, stale = cards[i]
        seen = use.get(name)
        return (
            0 if meta is not None and meta.pinned else 1,
            0 if name in kept else 1,
            1 if stale else 0,
            0 if meta is not None and meta.type in _FIRST_TYPES else 1,
            -seen.reads if seen is not None else 0,
            -_stamp(seen.last_read) if seen is not None else 0,
            -_stamp(meta.updated) if meta is not None else 0,
            name,
        )

    # One sort with one key per card: a 10,000-card index is ranked at every Run.
    return sorted(range(len(cards)), key=key)


def _stamp(text: str) -> int:
    """An RFC 3339 UTC time (``2026-12-01T10:00:00Z``) as a number that sorts like it; 0 when
    it is not one (a hand-written card's odd ``updated`` ranks as oldest)."""
    digits = text[:19].replace("-", "").replace(":", "").replace("T", "")
    return int(digits) if len(digits) == 14 and digits.isdigit() else 0

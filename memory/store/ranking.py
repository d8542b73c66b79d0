"""Which cards the prompt's index keeps when they do not all fit (DESIGN §15).

Best first: pinned cards; then cards the session already shows (``keep``: the index of one
session stays stable, a read does not push another card out mid-session); then fresh before
stale; then corrections and preferences; then by use (reads, then last read); then by
``updated``, newest first; the filename breaks ties. The chosen lines are shown in file order
(memory/store/index.py); ``MEMORY.md`` on disk keeps every card, sorted by filename.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from memory.constants import NoteType
from memory.grounding.usage import CardUse
from memory.model import NoteMeta

__all__ = ["RankedCard", "rank_order"]

_FIRST_TYPES = frozenset({NoteType.CORRECTION_FEEDBACK, NoteType.USER_PREFERENCE})


@dataclass(frozen=True)
class RankedCard:
    """What ranking needs of one card of a section (its line's position is its place in the list)."""

    filename: str
    meta: NoteMeta | None
    stale: bool = False


def rank_order(
    cards: Sequence[RankedCard],
    use: Mapping[str, CardUse],
    keep: Collection[str] = (),
) -> list[int]:
    """The positions of ``cards`` best first. ``use``: filename -> reads; ``keep``: filenames
    the session's index already shows."""
    keep = keep if isinstance(keep, set | frozenset) else set(keep)
    order = list(range(len(cards)))
    # Stable sorts, least significant key first: names ascending, then each key in turn.
    order.sort(key=lambda i: cards[i].filename)
    order.sort(key=lambda i: _updated(cards[i]), reverse=True)
    order.sort(key=lambda i: _use(use, cards[i].filename).last_read, reverse=True)
    order.sort(key=lambda i: _use(use, cards[i].filename).reads, reverse=True)
    order.sort(key=lambda i: _tier(cards[i], keep))
    return order


def _updated(card: RankedCard) -> str:
    return card.meta.updated if card.meta is not None else ""


def _use(use: Mapping[str, CardUse], filename: str) -> CardUse:
    return use.get(filename) or _NEVER


_NEVER = CardUse()


def _tier(card: RankedCard, keep: Collection[str]) -> tuple[int, int, int, int]:
    meta = card.meta
    pinned = meta is not None and meta.pinned
    first = meta is not None and meta.type in _FIRST_TYPES
    return (0 if pinned else 1, 0 if card.filename in keep else 1, 1 if card.stale else 0, 0 if first else 1)

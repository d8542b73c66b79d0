"""A memory card as the card screens show and edit it, and the card types and levels they offer.

The card types are the store's (``memory.constants.NoteType``), in its order: the browser's keys
1-4 and the editor's choices follow it.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.constants import NoteType
from memory.text.terminal import strip_terminal

__all__ = ["CARD_TYPES", "FIELDS", "LEVELS", "CardDraft", "as_typed", "clean_draft"]

CARD_TYPES: tuple[str, ...] = tuple(t.value for t in NoteType)
LEVELS = ("project", "user")
FIELDS = ("title", "summary", "type", "level", "body")


@dataclass(frozen=True)
class CardDraft:
    level: str  # "project" | "user"
    type: str  # one of CARD_TYPES ("" for a broken card: the Select then shows no choice)
    title: str
    summary: str
    body: str



def as_typed(text: str) -> str:
    """One line of card text safe to show, its spaces as typed (an edit field shows what it saves)."""
    return strip_terminal(text, keep_newlines=False)


def clean_draft(draft: CardDraft) -> CardDraft:
    """The draft as the fields will hold it: one-line title and summary, the body's newlines
    and tabs kept, no escapes; an unknown type becomes "" (no choice)."""
    return CardDraft(
        level=as_typed(draft.level),
        type=draft.type if draft.type in CARD_TYPES else "",
        title=as_typed(draft.title),
        summary=as_typed(draft.summary),
        body=strip_terminal(draft.body, keep_newlines=True),
    )

"""A memory card as the card screens show and edit it, and the card types and levels they offer.

The card types are the store's (``memory.constants.NoteType``), in its order: the browser's keys
1-4 and the editor's choices follow it.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.constants import NoteType
from memory.text.conflict_sides import SideName, side_names
from memory.text.terminal import strip_terminal

__all__ = [
    "CARD_TYPES",
    "FIELDS",
    "LEVELS",
    "CardConflict",
    "CardDraft",
    "ConflictSide",
    "as_typed",
    "clean_draft",
    "format_cites",
    "parse_cites",
]

CARD_TYPES: tuple[str, ...] = tuple(t.value for t in NoteType)
LEVELS = ("project", "user")
FIELDS = ("title", "summary", "type", "level", "cites", "body")
CITES_SEP = ", "


@dataclass(frozen=True)
class CardDraft:
    level: str  # "project" | "user"
    type: str  # one of CARD_TYPES ("" for a broken card: the Select then shows no choice)
    title: str
    summary: str
    body: str
    cites: tuple[str, ...] = ()  # the card's citations as specs ("path", "path:10-40")
    pinned: bool = False  # ``pinned: true``: first into the prompt's index


@dataclass(frozen=True)
class ConflictSide:
    """One branch's version of a card git left with conflict markers, sanitized.
    A side whose front matter does not parse is offered as body text only: ``draft.body`` is its
    whole text (nothing of it is lost), its title and type come from the other side or the file."""

    label: str  # what git wrote after its marker ("HEAD", a branch, a commit); "" when none
    draft: CardDraft
    problem: str = ""  # why its front matter does not parse; "" when it does


@dataclass(frozen=True)
class CardConflict:
    """Both versions of a conflicted card: ours (above git's ``=======``) and theirs (below)."""

    ours: ConflictSide
    theirs: ConflictSide

    def names(self) -> tuple[SideName, SideName]:
        """What a person calls each version: "this machine" and "the remote" for a conflict
        ``memory sync`` left (whichever side git put them on), else git's "ours" and "theirs"."""
        return side_names(self.ours.label, self.theirs.label)

    def versions(self) -> str:
        """ "ours, theirs" or "this machine's, the remote's": its two versions, for a line of keys."""
        first, second = self.names()
        return f"{first.possessive}, {second.possessive}"


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
        cites=parse_cites(format_cites(draft.cites)),
        pinned=draft.pinned,
    )


def format_cites(cites: tuple[str, ...]) -> str:
    """The citations as the editor's one-line field shows them."""
    return CITES_SEP.join(as_typed(c).strip() for c in cites)


def parse_cites(text: str) -> tuple[str, ...]:
    """The editor's field back as specs: comma-separated, blanks dropped. The store checks each
    one (confinement, the range) and says why it drops one."""
    return tuple(part.strip() for part in as_typed(text).split(",") if part.strip())

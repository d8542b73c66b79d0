"""What the rewind view shows, as the App hands it over: the session's turns, and for one of them
what a rewind would do. The App builds these (reading the session and its checkpoints is its
job); the widgets only draw them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["BASH_NOTE", "FileLine", "PlanFile", "PlanState", "RewindChoice", "TurnItem"]

BASH_NOTE = "this turn ran bash: files it changed are not restored"


@dataclass(frozen=True)
class FileLine:
    """A file a turn changed: its path and lines added and removed (None: not counted)."""

    path: str
    added: int | None = None
    removed: int | None = None


@dataclass(frozen=True)
class TurnItem:
    """One turn of the list. ``when``: its local time as shown; ``note``: what sets it apart
    ("left out of the conversation", …), "" for none."""

    turn: int
    when: str
    text: str
    kind: Literal["turn", "rewind"] = "turn"
    files: tuple[FileLine, ...] = ()
    bash: bool = False
    note: str = ""


@dataclass(frozen=True)
class PlanFile:
    """What a rewind does to one file; ``conflict``: why it is one (``diff``: the change since)."""

    path: str
    action: Literal["restore", "delete", "same"]
    conflict: str | None = None
    diff: str = ""


@dataclass(frozen=True)
class PlanState:
    """What rewinding to before ``to_turn`` would do. ``conversation``: the line about the
    conversation; ``memory``: the line about memory (never rewound); ``memory_undo``: whether the
    memory key can undo the rewound turns' batches."""

    to_turn: int
    text: str
    files: tuple[PlanFile, ...]
    bash_turns: tuple[int, ...]
    conversation: str
    memory: str
    memory_undo: bool = False

    @property
    def conflicts(self) -> tuple[PlanFile, ...]:
        return tuple(f for f in self.files if f.conflict is not None)


@dataclass(frozen=True)
class RewindChoice:
    """What the person chose to rewind: the files, the conversation, or both."""

    files: bool
    conversation: bool

"""Data contracts of the memory core: notes, operations, batch results, history entries, turns."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from memory.constants import MANUAL_SOURCE, Action, Level, NoteType


class Operation(BaseModel):
    """One validated operation. Title/summary are sanitized and text is redacted by the parser."""

    model_config = ConfigDict(frozen=True)

    action: Action
    level: Level | None = None
    type: NoteType | None = None
    title: str | None = None
    summary: str | None = None
    slug: str | None = None
    filename: str | None = None
    content: str | None = None
    # What a project card rests on, as given (``path`` or ``path:START-END`` strings, or
    # ``{path, lines}`` objects): checked and hashed by the transaction (memory.grounding), which
    # keeps the ones inside the workspace and records why each other one was dropped. None: an
    # update keeps the card's citations; ``[]`` removes them.
    cites: tuple[Any, ...] | None = None


# An op kept in a record (a rejection on a job or in the history) is shortened to this much content.
RECORD_CONTENT_LIMIT = 2000


def dump_op(op: Operation, *, content_limit: int | None = RECORD_CONTENT_LIMIT) -> dict[str, object]:
    """An op as JSON data: shortened for records, or whole (``content_limit=None``) to validate it again."""
    d = op.model_dump(mode="json", exclude_none=True)
    content = d.get("content")
    if content_limit is not None and isinstance(content, str) and len(content) > content_limit:
        d["content"] = content[:content_limit] + "…"
    return d


class Rejection(BaseModel):
    """An op that was not applied, with a one-line reason. ``index`` is its place in the batch."""

    index: int
    reason: str
    op: dict[str, object] | None = None


class Conflict(BaseModel):
    """An update/delete whose note changed since the snapshot the model saw."""

    index: int
    level: Level
    filename: str
    reason: str
    op: dict[str, object] | None = None


class Cite(BaseModel):
    """One file a project card rests on, as the app recorded it when the card was written or
    last confirmed. ``blob``: the git blob id when the file was tracked, else
    ``sha256:<hex>``; never a value the model gave."""

    model_config = ConfigDict(frozen=True)

    path: str  # workspace-relative, POSIX separators
    lines: str | None = None  # "10-40" or "12"
    blob: str

    @property
    def spec(self) -> str:
        """``path`` or ``path:START-END``, as an op gives it."""
        return f"{self.path}:{self.lines}" if self.lines else self.path


class DroppedCite(BaseModel):
    """A citation an op gave that was not kept, with the one-line reason."""

    index: int  # the op's place in the batch
    cite: str
    reason: str


class NoteMeta(BaseModel):
    # Frozen: notes come out of a cache shared by every reader of the process.
    model_config = ConfigDict(frozen=True)

    title: str
    summary: str = ""
    type: NoteType
    created: str
    updated: str
    source: str = MANUAL_SOURCE
    cites: tuple[Cite, ...] = ()
    confirmed: str = ""  # when a person last said "still true" (RFC 3339), or ""
    # A person's "always in the prompt": ranked first when the index does not fit.
    pinned: bool = False
    # Who wrote or last changed the card: their git ``user.name`` when set, nothing else about
    # them; "" when unknown.
    author: str = ""


class ConflictSides(BaseModel):
    """A card file that git left with conflict markers (both branches changed it): the two
    whole files it stands for, rebuilt from the hunks (a diff3 base section is dropped)."""

    model_config = ConfigDict(frozen=True)

    ours: str
    theirs: str
    ours_label: str = ""  # what git wrote after the markers: "HEAD", a branch, a commit
    theirs_label: str = ""


class Note(BaseModel):
    model_config = ConfigDict(frozen=True)

    level: Level
    filename: str
    meta: NoteMeta
    body: str
    # sha256 of the file's bytes: the compare-and-swap token for update/delete.
    sha256: str
    # Set when the front matter could not be parsed (or names an unknown type): the note is
    # still listed, never lost, and ``doctor`` reports it.
    broken: str | None = None
    # The file is not UTF-8 or its front matter does not parse: no prompt gets a guess of it
    # (a type typo alone still parses, and is listed under the type its name implies).
    unparsed: bool = False
    # Set when the file holds git conflict markers: never parsed into a prompt (``unparsed``
    # is set too), shown with both versions until a person resolves it. ``meta``
    # is then our side's front matter when it parses (for its title), and ``body`` the raw text.
    conflict: ConflictSides | None = None


class IndexEntry(NamedTuple):
    """One card of the prompt's index: what its line says, and whether the line is in the prompt.

    The index text is rendered from these (memory/store/index.py ``render_entries``), so whoever
    needs a card's title, stale reason or place reads it here, never back out of the text. A
    named tuple, not a model: a 10,000-card index makes this many at every Run."""

    level: Level
    filename: str
    type: NoteType
    title: str  # sanitized, one line: the front matter's title, else the filename
    summary: str  # sanitized, one line; "" when the card has none
    stale: str | None  # why a cited file no longer matches (the line's stale mark); None: fresh or uncited
    author: str  # the front matter's author ("" unknown)
    pinned: bool
    in_prompt: bool  # False: the budget left its line out (search and recall still find it)
    line: str  # the line the prompt gets, stale mark included


@dataclass(frozen=True)
class MemoryText:
    """What read_memory gives the model: the text (a card's citations and body, or a level's
    whole index), and whether the card read was stale (said in the text's header too)."""

    text: str
    stale: bool = False


class Turn(BaseModel):
    """One completed user turn as extraction sees it: role + text only, and the workspace paths
    its tool calls read, listed, searched or changed (paths only)."""

    messages: list[TurnMessage]
    session: str = ""
    paths: list[str] = Field(default_factory=list)


class TurnMessage(BaseModel):
    role: Literal["user", "assistant"]
    text: str


Turn.model_rebuild()


class AppliedOp(BaseModel):
    index: int
    action: Action
    level: Level
    filename: str
    title: str = ""


class BatchResult(BaseModel):
    """What one transaction did. ``txid`` is None when nothing was written."""

    txid: str | None = None
    applied: list[AppliedOp] = Field(default_factory=list)
    rejected: list[Rejection] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)
    dropped_cites: list[DroppedCite] = Field(default_factory=list)


class Change(BaseModel):
    """One note file changed by a batch: enough to undo it and to see whether it changed since."""

    level: Level
    filename: str
    before_b64: str | None = None  # the file's bytes before (None: it did not exist)
    after_sha: str | None = None  # None: the batch removed it


# What made a history entry: a turn's memory job, a consolidation job, a person's review
# (approve, reject, dismiss), a person's own edit, an undo; "batch": not recorded (old entries).
HistoryKind = Literal["turn", "consolidation", "approve", "reject", "dismiss", "manual", "undo", "batch"]


class HistoryEntry(BaseModel):
    """One committed batch (or undo) of a workspace, as kept under the history folder.

    ``label`` is for people (``memory log``); code reads ``kind`` and ``took_over`` (the queued
    jobs a memory job coalesced: a process waiting for one of them learns it was done here)."""

    txid: str
    time: str
    workspace: str
    kind: HistoryKind = "batch"
    label: str = ""
    took_over: list[str] = Field(default_factory=list)
    source: str = ""
    jobs: list[str] = Field(default_factory=list)
    applied: list[AppliedOp] = Field(default_factory=list)
    rejected: list[Rejection] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)
    dropped_cites: list[DroppedCite] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)
    undone_by: str | None = None
    undo_of: str | None = None


def utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def rfc3339(t: _dt.datetime) -> str:
    return t.astimezone(_dt.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")

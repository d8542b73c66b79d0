"""Data contracts of the memory core (DESIGN.md §3, §5)."""

from __future__ import annotations

import datetime as _dt
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Level(StrEnum):
    PROJECT = "project"
    USER = "user"


class NoteType(StrEnum):
    USER_PREFERENCE = "user_preference"
    CORRECTION_FEEDBACK = "correction_feedback"
    PROJECT_KNOWLEDGE = "project_knowledge"
    REFERENCE_MATERIAL = "reference_material"


class Action(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    NOOP = "noop"


# Limits of DESIGN.md §4 and §5.
MAX_OPS = 50
MAX_CONTENT_BYTES = 16 * 1024
MAX_TITLE = 100
MAX_SUMMARY = 200
MAX_SLUG = 48
INDEX_MAX_LINES = 200
INDEX_MAX_BYTES = 25_600
INDEX_FILE = "MEMORY.md"
MANUAL_SOURCE = "manual"


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


class NoteMeta(BaseModel):
    title: str
    summary: str = ""
    type: NoteType
    created: str
    updated: str
    source: str = MANUAL_SOURCE


class Note(BaseModel):
    level: Level
    filename: str
    meta: NoteMeta
    body: str
    # sha256 of the file's bytes: the compare-and-swap token for update/delete.
    sha256: str
    # Set when the front matter could not be parsed: the note is still listed, never lost.
    broken: str | None = None


class Turn(BaseModel):
    """One completed user turn as extraction sees it: role + text only."""

    messages: list[TurnMessage]
    session: str = ""


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

    @property
    def index_changed(self) -> bool:
        return bool(self.applied)


def utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def rfc3339(t: _dt.datetime) -> str:
    return t.astimezone(_dt.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")

"""The session file's records, one JSON object a line (the format is described in
app/agent/conversation/session_log.py), as typed values: written by :func:`dumps`, read back by
:func:`parse_record`.

Reading is lenient, as a file written by an older version or cut by a crash must still load: a
field of the wrong type reads as absent (a ``turn_start`` whose text is not a string still
counts as a turn), and a record of a type this version does not know is kept as
:class:`OtherRecord` and carries nothing.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue, SkipValidation, TypeAdapter

__all__ = [
    "CompactionAt",
    "CompactionRecord",
    "MessageRecord",
    "MetaRecord",
    "OffloadRecord",
    "OtherRecord",
    "Record",
    "RewindRecord",
    "TodosRecord",
    "TurnEndRecord",
    "TurnStartRecord",
    "UsageRecord",
    "dumps",
    "parse_record",
]


def _str(value: object) -> object:
    return value if isinstance(value, str) else None


def _count(value: object) -> object:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _flag(value: object) -> object:
    return value if isinstance(value, bool) else None


# JSON read from the file is JSON already: its values are not walked again (pydantic walks a
# JsonValue node by node in Python, the cost of a long session's replay).
_Json = SkipValidation[JsonValue]


def _list(value: object) -> object:
    return value if isinstance(value, list) else None


def _object(value: object) -> object:
    return value if isinstance(value, dict | BaseModel) else None


def _receipt(value: object) -> object:
    if not isinstance(value, dict):
        return None
    return {k: v for k, v in value.items() if isinstance(v, list) and all(isinstance(x, str) for x in v)}


# A field of the wrong type reads as absent.
Str = Annotated[str | None, BeforeValidator(_str)]
Count = Annotated[int | None, BeforeValidator(_count)]
Flag = Annotated[bool | None, BeforeValidator(_flag)]
JsonList = Annotated[list[_Json] | None, BeforeValidator(_list)]
# A turn's memory receipt: ``shown``, ``read``, ``stale`` (and ``recalled``), cards as level/filename.
Receipt = Annotated[dict[str, list[str]] | None, BeforeValidator(_receipt)]


class _Record(BaseModel):
    # What a writer adds that a reader does not use (a turn's ``iterations``) is kept.
    model_config = ConfigDict(extra="allow")


class MetaRecord(_Record):
    """Line 1: the session's identity."""

    type: Literal["meta"] = "meta"
    version: _Json = None
    id: Str = None
    workspace: Str = None
    created: Str = None
    model: Str = None


class TurnStartRecord(_Record):
    type: Literal["turn_start"] = "turn_start"
    turn: Count = None
    time: Str = None
    text: Str = None  # the person's words (with the files they attached)
    kind: Str = None  # "rewind" for a rewind's entry


class TurnEndRecord(_Record):
    """A turn's end: its status, why it stopped, its memory job and receipt; ``dropped``: the
    turn is left out of the conversation (the file keeps it)."""

    type: Literal["turn_end"] = "turn_end"
    turn: Count = None
    status: Str = None
    time: Str = None
    dropped: Flag = None
    message: Str = None
    stop_reason: Str = None
    job: Str = None
    memory: Receipt = None
    rewind: _Json = None


class MessageRecord(_Record):
    """A message of the conversation, as JSON (read back by ``blocks.parse_message``);
    ``repair``: written by the app to keep the conversation valid."""

    type: Literal["message"] = "message"
    message: _Json = None
    repair: Str = None


class UsageRecord(_Record):
    """The usage anchor of a request: its input tokens and the characters of its messages."""

    type: Literal["usage"] = "usage"
    tokens: Count = None
    chars: Count = None


class OffloadRecord(_Record):
    """A tool result moved to the session's results folder: ``content`` is its stub."""

    type: Literal["offload"] = "offload"
    tool_use_id: Str = None
    content: Str = None


class CompactionAt(BaseModel):
    """What the lines before a compaction boundary add up to, so a replay can start at it."""

    line: Count = None
    turns: Count = None
    compactions: Count = None
    open: Flag = None


class CompactionRecord(_Record):
    """A boundary: the conversation goes on from ``messages`` with ``summary`` in the system
    prompt; ``turn_start``: where the turn in progress begins in them."""

    type: Literal["compaction"] = "compaction"
    time: Str = None
    summary: Str = None
    turn_start: Count = None
    messages: JsonList = None
    summarised: Count = None
    requests: Count = None
    at: Annotated[CompactionAt | None, BeforeValidator(_object)] = None
    # The to-do list at the boundary (left out when there is none): a replay from the boundary on
    # has it without the lines before.
    todos: JsonList = None


class RewindRecord(_Record):
    """The conversation as it was before turn ``to`` (messages and summary)."""

    type: Literal["rewind"] = "rewind"
    turn: Count = None
    to: Count = None
    time: Str = None
    summary: Str = None
    messages: JsonList = None
    todos: JsonList = None  # the to-do list as it was before turn ``to`` (None: an older file)


class TodosRecord(_Record):
    """The to-do list, replaced whole (``todo_write``): its items (app/agent/conversation/todos.py)."""

    type: Literal["todos"] = "todos"
    todos: JsonList = None


class OtherRecord(_Record):
    """A record of a type this version does not know: it carries nothing."""

    type: str


# A known record by its ``type`` tag; a record of another type as OtherRecord.
Record = Annotated[
    Annotated[
        MetaRecord
        | TurnStartRecord
        | TurnEndRecord
        | MessageRecord
        | UsageRecord
        | OffloadRecord
        | CompactionRecord
        | RewindRecord
        | TodosRecord,
        Field(discriminator="type"),
    ]
    | OtherRecord,
    Field(union_mode="left_to_right"),
]

# mypy reads the annotated union as a value, not a type: the adapter's type is stated.
_RECORD: TypeAdapter[Record] = TypeAdapter(Record)


def parse_record(value: JsonValue) -> Record | None:
    """A decoded line as a record; None when it is not an object with a string ``type``."""
    try:
        return _RECORD.validate_python(value)
    except ValueError:
        return None


def dumps(record: _Record) -> str:
    """One line of the file. ``type`` first (readers find records by their line's first bytes);
    ASCII only, so a lone surrogate can never make a line unencodable; unset fields left out."""
    return json.dumps(
        record.model_dump(mode="json", exclude_none=True), ensure_ascii=True, separators=(",", ":")
    )

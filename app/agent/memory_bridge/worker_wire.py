"""The memory worker child's line protocol, both ends: one JSON object per line, told apart by ``kind``.

The child (``pseudoclaude memory worker``, app/cli/memory/worker.py) writes on its stdout:

- ``usage``: one memory-model request's tokens (the app counts them in the session's cost);
- ``wrote``: a store file its commit is about to move into place (``sha`` None: removed), sent
  before the move, so the app's store watcher knows the change for its own worker's;
- ``outcome``: a job's outcome (applied, failed, held, retrying) after its commit: the app
  announces it as its own worker's. This is how a write reaches the app; the app's look at the
  spool and its store watcher only catch what no line said (a child killed before its line).

The app (app/agent/memory_bridge/worker_process.py) writes on the child's stdin:

- ``wake``: a job was just spooled (look at the spool now, not at the next poll);
- ``mode``: the memory mode changed.

Both ends use only :func:`encode` and :func:`decode`; nothing else reads or writes these lines.
A line that is not one of these messages is ``None`` and said in the log, never raised.
"""

from __future__ import annotations

import logging
import os
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    RootModel,
    ValidationError,
    field_validator,
)

from app.agent.model.provider import Usage
from memory.constants import MemoryMode
from memory.events import JobApplied, JobFailed, JobHeld, JobRetrying, MemoryEvent

__all__ = [
    "MAX_COMMAND_BYTES",
    "MAX_LINE_BYTES",
    "ModeMsg",
    "Msg",
    "Outcome",
    "OutcomeMsg",
    "UsageMsg",
    "WakeMsg",
    "WroteMsg",
    "decode",
    "encode",
    "fits",
    "outcome_msg",
]

log = logging.getLogger(__name__)

# A line of the child's at most (newline included): a job's outcome with many rejected ops is the
# longest (their records are shortened). A longer one is not sent; the app's look at the spool
# announces that job instead.
MAX_LINE_BYTES = 1 << 20
# A command on the child's stdin at most: the app sends only short ones.
MAX_COMMAND_BYTES = 200

# The events a job's ``outcome`` line carries.
Outcome = JobApplied | JobFailed | JobHeld | JobRetrying


class _Msg(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class UsageMsg(_Msg):
    """One memory-model request's tokens."""

    kind: Literal["usage"] = "usage"
    model: Annotated[str, Field(max_length=200)]
    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0
    cache_read_input_tokens: NonNegativeInt = 0
    cache_creation_input_tokens: NonNegativeInt = 0

    @classmethod
    def of(cls, model: str, usage: Usage) -> UsageMsg:
        return cls(
            model=model,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
        )

    def usage(self) -> Usage:
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens,
        )


class WroteMsg(_Msg):
    """A store file the child's commit writes (``sha`` of its content; None: removed). The path
    goes as its bytes (base64 in the line): a workspace folder's name need not be UTF-8."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")

    kind: Literal["wrote"] = "wrote"
    path: Annotated[bytes, Field(min_length=1, max_length=4096)]
    sha: Annotated[str, Field(max_length=128)] | None

    @classmethod
    def of(cls, path: str, sha: str | None) -> WroteMsg:
        return cls(path=os.fsencode(path), sha=sha)

    @property
    def file(self) -> str:
        """The path as the app names it."""
        return os.fsdecode(self.path)

    @field_validator("path")
    @classmethod
    def _no_nul(cls, path: bytes) -> bytes:
        if b"\0" in path:
            raise ValueError("a path holds no NUL")
        return path


class OutcomeMsg(_Msg):
    """A job's outcome, as the child's manager emitted it."""

    kind: Literal["outcome"] = "outcome"
    event: Annotated[Outcome, Field(discriminator="kind")]


class WakeMsg(_Msg):
    """A job was spooled: look at the spool now."""

    kind: Literal["wake"] = "wake"


class ModeMsg(_Msg):
    """The memory mode is now ``mode``."""

    kind: Literal["mode"] = "mode"
    mode: MemoryMode


Msg = UsageMsg | WroteMsg | OutcomeMsg | WakeMsg | ModeMsg


class _Line(RootModel[Annotated[Msg, Field(discriminator="kind")]]):
    """One line: whichever message its ``kind`` names."""


def encode(msg: Msg) -> str:
    """The message as one line of JSON (no newline: JSON escapes every one inside a string)."""
    return msg.model_dump_json()


def fits(line: str) -> bool:
    """Whether the other end reads ``line`` whole (with its newline): only a job's outcome with
    very many rejected ops is ever too long."""
    return len(line.encode("utf-8", "surrogateescape")) + 1 < MAX_LINE_BYTES


def outcome_msg(event: MemoryEvent) -> OutcomeMsg | None:
    """The ``outcome`` message of a job's outcome; None for an event that is not one."""
    return OutcomeMsg(event=event) if isinstance(event, Outcome) else None


def decode(line: bytes | str) -> Msg | None:
    """The message of one line (its newline may be there); None for a blank line, and for a line
    that is no message (too long, not JSON, an unknown kind, a field of the wrong type), said in
    the log in one line, never the line itself."""
    raw = line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line
    if not raw.strip():
        return None
    if len(raw) >= MAX_LINE_BYTES:
        log.warning("memory worker wire: a line of %d bytes ignored", len(raw))
        return None
    try:
        # strict: a count is a number, never a string or a boolean that happens to convert.
        return _Line.model_validate_json(raw, strict=True).root
    except ValidationError as e:
        log.warning(
            "memory worker wire: a line ignored (%d bytes): %.200s", len(raw), " ".join(str(e).split())
        )
        return None

"""Shared pieces of the agent tools: the result and context types, input checks, one-line errors."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

MAX_REASON_CHARS = 400


class ResultView(BaseModel):
    """How a result is shown to the person, built by the tool from what it knows (the model
    never gets it; it gets ``content``): ``status`` for the header ("exit 0", "exit -9 SIGKILL",
    "timed out after 5 s"), the ``output`` to show, and whether the call ``failed``."""

    model_config = ConfigDict(frozen=True)

    status: str
    output: str
    failed: bool


class CardRead(BaseModel):
    """A memory card read_memory read, for the turn's receipt in the session log (never sent to
    the model): its level, its filename, and whether its citations were stale when read."""

    model_config = ConfigDict(frozen=True)

    level: str
    filename: str
    stale: bool = False

    @property
    def key(self) -> str:
        return f"{self.level}/{self.filename}"


class ToolResult(BaseModel):
    """What a tool call gives back to the model (``is_error`` maps to the API's ``is_error``);
    ``view``, when the tool gives one, is for the screen only; ``card`` (read_memory of a card)
    for the turn's receipt only."""

    content: str
    is_error: bool = False
    view: ResultView | None = None
    card: CardRead | None = None


class MemoryReader(Protocol):
    """What read_memory needs of the memory stores: the read, and counting it (``record_read``
    never raises: a count is a signal, and a failing one must not fail the read)."""

    def read_memory(self, level: str, filename: str) -> str: ...

    def record_read(self, level: str, filename: str) -> None: ...


class FoundCard(Protocol):
    """One card search_memory found: its level and its index line (stale mark included)."""

    @property
    def level(self) -> str: ...

    @property
    def line(self) -> str: ...


class SearchedStores(Protocol):
    """What search_memory asks of the stores: whether the project store may be searched."""

    @property
    def project_trusted(self) -> bool: ...

    @property
    def has_project_level(self) -> bool: ...


class MemorySearcher(Protocol):
    """What search_memory needs of ``memory.search.engine.MemorySearch``: the search (trusted
    levels only), the stores it searches, and the one-line notices of a rebuilt cache."""

    @property
    def stores(self) -> SearchedStores: ...

    def search(self, query: str, level: str | None = ..., limit: int = ..., floor: float = ...) -> Sequence[FoundCard]: ...

    def notices(self) -> list[str]: ...


class StoredResults(Protocol):
    """What read_result needs of the session's stored tool results."""

    def read(self, rid: str, offset: int | None = None, limit: int | None = None) -> str: ...


@dataclass
class ToolContext:
    """What a tool may use. ``workspace`` is the real path every file tool is confined to;
    ``memory`` reads a memory note, or is None."""

    workspace: Path
    memory: MemoryReader | None = None
    bash_timeout_default: float = 120.0
    bash_timeout_max: float = 600.0
    max_output_chars: int = 30_000
    grep_timeout: float = 20.0  # wall-clock bound of one grep call (a runaway regex ends there)
    # The session's offloaded tool results, for read_result; None without a session.
    results: StoredResults | None = None
    # search_memory's search over both stores; None: memory search is not available.
    search: MemorySearcher | None = None
    # How much of a command's output bash keeps (head and tail, per stream pair). With a session
    # the runtime raises it: a result over the offload bound is kept whole on disk, so output is
    # not cut where it can be stored instead (compaction's lossless stage).
    bash_capture_chars: int | None = None


class ToolError(Exception):
    """A tool refused or failed: its message becomes a one-line ``is_error`` result."""


def quote(value: str, limit: int = 200) -> str:
    """A model- or file-supplied string shown inside a message: repr-quoted (so control
    characters and newlines cannot break the one line) and bounded."""
    r = repr(value)
    if len(r) > limit:
        r = r[: limit - 2] + "…" + r[0]
    return r


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD: a surrogate cannot be encoded as
    UTF-8, so one in a tool result would break the request and the saved session for good."""
    return _SURROGATE_RE.sub("\ufffd", text)


_NAME_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def display_name(name: str) -> str:
    """A file name from the OS for output: undecodable bytes (kept by Python as surrogate
    escapes) become U+FFFD, as read_file/grep/bash do for contents, and control characters are
    shown escaped (``\\n``), so a repository's file name cannot add lines to a listing."""
    try:
        text = os.fsencode(name).decode("utf-8", "replace")
    except UnicodeError:
        text = clean_text(name)
    return _NAME_CONTROL_RE.sub(lambda m: repr(m.group())[1:-1], text)


# -- input checks (required keys, types; unknown keys are ignored) -----------------------------


def req_str(inp: dict[str, Any], key: str, *, allow_empty: bool = False) -> str:
    if key not in inp or inp[key] is None:
        raise ToolError(f"missing required input {key!r}")
    v = inp[key]
    if not isinstance(v, str):
        raise ToolError(f"input {key!r} must be a string, not {_type_name(v)}")
    if not allow_empty and v == "":
        raise ToolError(f"input {key!r} must not be empty")
    return v


def opt_str(inp: dict[str, Any], key: str) -> str | None:
    v = inp.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise ToolError(f"input {key!r} must be a string, not {_type_name(v)}")
    return v


def opt_int(inp: dict[str, Any], key: str, *, minimum: int) -> int | None:
    v = inp.get(key)
    if v is None:
        return None
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ToolError(f"input {key!r} must be an integer, not {_type_name(v)}")
    if v < minimum:
        raise ToolError(f"input {key!r} must be at least {minimum} (got {v})")
    return v


def opt_number(inp: dict[str, Any], key: str) -> float | None:
    v = inp.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ToolError(f"input {key!r} must be a number, not {_type_name(v)}")
    if v <= 0:
        raise ToolError(f"input {key!r} must be greater than 0 (got {v:g})")
    return float(v)


def opt_bool(inp: dict[str, Any], key: str) -> bool:
    v = inp.get(key)
    if v is None:
        return False
    if not isinstance(v, bool):
        raise ToolError(f"input {key!r} must be true or false, not {_type_name(v)}")
    return v


def _type_name(v: object) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array", dict: "an object"}.get(
        type(v), type(v).__name__
    )

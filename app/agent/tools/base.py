"""Shared pieces of the agent tools: the result and context types, input validation, one-line errors."""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from app.agent.conversation.blocks import ImageBlock, scrub_text
from app.agent.conversation.todos import TodoKeeper, TodoList
from memory.model import MemoryText

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


class ModelUsage(BaseModel):
    """The tokens of a model request a tool made itself (``web_search``'s side request), and the
    searches its server tool made: the Run counts them in the turn's usage, and the faces in the
    session's cost under ``model``."""

    model_config = ConfigDict(frozen=True)

    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    web_search_requests: int = 0


class ToolResult(BaseModel):
    """What a tool call gives back to the model (``is_error`` maps to the API's ``is_error``):
    its text, and the images that go with it (``read_file`` of an image, an MCP tool's or
    ``web_fetch``'s image content), each already prepared (``conversation.images``). ``view``,
    when the tool gives one, is for the screen only; ``card`` (read_memory of a card) for the
    turn's receipt only; ``usage`` (a model request the tool made) for the cost only."""

    content: str
    images: list[ImageBlock] = Field(default_factory=list)
    is_error: bool = False
    view: ResultView | None = None
    card: CardRead | None = None
    usage: ModelUsage | None = None
    hook_s: float = 0.0  # seconds the call's hooks took (the tool block shows it)
    hook_failed: int = 0  # how many of them failed (the tool block shows it)
    todos: TodoList | None = None  # the to-do list todo_write saved, for the faces to show
    # The Run ends after this round, with no further request, this text being the turn's answer
    # for the person (print mode's plan: nobody is there to approve it). None: the model goes on.
    ends_run: str | None = None


class MemoryReader(Protocol):
    """What read_memory needs of the memory stores: the read, and counting it (``record_read``
    never raises: a count is a signal, and a failing one must not fail the read)."""

    def read_memory_text(self, level: str, filename: str) -> MemoryText: ...

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

    def search(
        self, query: str, level: str | None = ..., limit: int = ..., floor: float = ...
    ) -> Sequence[FoundCard]: ...

    def notices(self) -> list[str]: ...


class StoredResults(Protocol):
    """What read_result needs of the session's stored tool results."""

    def read(self, rid: str, offset: int | None = None, limit: int | None = None) -> str: ...


class WriteRecorder(Protocol):
    """What the file tools tell the session's checkpoints (app/agent/undo/checkpoints.Recorder, which
    never raises): a file's real path before a write and the bytes after it, and that bash ran."""

    def before_write(self, real: str) -> None: ...

    def after_write(self, real: str, data: bytes) -> None: ...

    def ran_bash(self) -> None: ...


# Runs a sub-agent on a prompt and gives its answer as the call's result (``task``).
SubAgent = Callable[[str], Awaitable["ToolResult"]]

# Whether an ``allow`` rule names this tool and this host exactly (``web_fetch(domain:127.0.0.1)``):
# the only way a web tool may reach a loopback, private or link-local address. (tool, host).
HostNamed = Callable[[str, str], bool]


class PlanAnswer(BaseModel):
    """The person's answer to a plan ``exit_plan_mode`` proposed: ``accept-edits`` (approved; edits
    then run without asking), ``default`` (approved; each edit asks) or ``keep-planning`` (not
    approved, with an optional ``note`` for the model)."""

    model_config = ConfigDict(frozen=True)

    choice: Literal["accept-edits", "default", "keep-planning"]
    note: str = ""


# Shows the plan to the person and returns their answer (the app's deciding window); None in
# print mode, where the plan is printed and the run ends.
PlanApproval = Callable[[str], Awaitable[PlanAnswer]]


class WebSearcher(Protocol):
    """``web_search``'s side request to the Messages API (its server tool on the web model)."""

    async def search(
        self, query: str, allowed_domains: list[str], blocked_domains: list[str]
    ) -> ToolResult: ...


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
    # The session's checkpoints of write_file/edit_file (rewind); None without a session.
    checkpoints: WriteRecorder | None = None
    # The Run's sub-agent for ``task``, set by the runner for that one call; None elsewhere.
    subagent: SubAgent | None = None
    # The rules in force, asked whether an allow rule names a host exactly; None: none does.
    host_named: HostNamed | None = None
    # ``web_search``'s side request; None: web search is not available in this run.
    web_searcher: WebSearcher | None = None
    # ``exit_plan_mode``'s question to the person; None: nobody can be asked (print mode).
    plan_approval: PlanApproval | None = None
    # The session's to-do list (todo_write replaces it); None: a list of the call's own, not kept.
    todos: TodoKeeper | None = None
    # Whether the mode is ``plan`` now (exit_plan_mode is offered and runs only then); None: never.
    planning: Callable[[], bool] | None = None


class ToolError(Exception):
    """A tool refused or failed: its message becomes a one-line ``is_error`` result."""


def quote(value: str, limit: int = 200) -> str:
    """A model- or file-supplied string shown inside a message: repr-quoted (so control
    characters and newlines cannot break the one line) and bounded."""
    r = repr(value)
    if len(r) > limit:
        r = r[: limit - 2] + "…" + r[0]
    return r


_NAME_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def display_name(name: str) -> str:
    """A file name from the OS for output: undecodable bytes (kept by Python as surrogate
    escapes) become U+FFFD, as read_file/grep/bash do for contents, and control characters are
    shown escaped (``\\n``), so a repository's file name cannot add lines to a listing."""
    try:
        text = os.fsencode(name).decode("utf-8", "replace")
    except UnicodeError:
        text = scrub_text(name)
    return _NAME_CONTROL_RE.sub(lambda m: repr(m.group())[1:-1], text)


# -- tool inputs -------------------------------------------------------------------------------


class ToolInput(BaseModel):
    """A tool's input, as the model sent it: the fields of a subclass are the tool's inputs, and
    ``schema.input_schema`` turns them into the JSON schema the model is given. Validate with
    ``parse_input``: any wrong input becomes one ToolError naming it. This is the only check of a
    tool's input: a tool gets the validated model, never the raw object.

    Unknown keys are ignored rather than refused (the schema tells the model there are none, but
    a stray key costs nothing), and a null counts as an absent key (models send null for an
    input they leave out). The field checks (``fields``: ``Text``, ``Count``, …) check the type
    themselves, in the words of the errors, and never coerce (``"5"`` is not a number, ``true``
    is not 1)."""

    # Built on first use: most tools of a session are never called.
    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


InputT = TypeVar("InputT", bound=ToolInput)


def parse_input(model: type[InputT], inp: object) -> InputT:
    """``inp`` (a JSON object as sent) validated as ``model``; ToolError with the first wrong
    input's reason (inputs are checked in the order the model declares them)."""
    try:
        return model.model_validate(inp)
    except ValidationError as e:
        raise ToolError(_reason(e)) from None


def _reason(e: ValidationError) -> str:
    """The first wrong input's reason, in the words of the errors."""
    error = e.errors(include_url=False)[0]
    loc = error["loc"]
    key = loc[0] if loc else "input"
    kind = error["type"]
    if kind == "value_error":  # a field check's own words (``refuse``)
        return str(error.get("ctx", {}).get("error"))
    if kind == "missing":
        return f"missing required input {key!r}"
    if kind == "greater_than_equal":
        return f"input {key!r} must be at least {error.get('ctx', {}).get('ge')} (got {error['input']})"
    if kind == "less_than_equal":
        return f"input {key!r} must be at most {error.get('ctx', {}).get('le')} (got {error['input']})"
    return f"input {key!r}: {error['msg']}"

"""The events a Run delivers, as the faces (print mode, the full-screen app) receive them.

The provider's TextDelta, ThinkingDelta, ToolUseStart, ToolUseArgs, UsageEvent (one per request)
and Retrying pass through with ``depth`` set: 0 for the top-level agent, n for a sub-agent n
levels down.

``AnswerDone`` is not the Runner's: a face that draws asynchronously (the App) posts it to itself
from the ``answer_shown`` hook it gives ``Runner.run``, and calls ``shown`` once the answer's last
words are on screen; the Runner spools the turn's job after that (``wait_shown``, bounded).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from app.agent.conversation.blocks import JsonObject
from app.agent.conversation.todos import TodoList
from app.agent.model.provider import (
    Retrying,
    TextDelta,
    ThinkingDelta,
    ToolUseArgs,
    ToolUseStart,
    Usage,
    UsageEvent,
)
from app.agent.tools import ResultView, ToolResult
from memory.text.lines import format_bytes
from memory.text.redact import redact

_T = TypeVar("_T")
log = logging.getLogger(__name__)

RunStatus = Literal["completed", "error", "cancelled", "max_iterations", "stopped"]


@dataclass(frozen=True)
class RequestStarted:
    """A model request is about to be sent (``iteration``: 1 for the Run's first request)."""

    iteration: int
    depth: int = 0


@dataclass(frozen=True)
class ToolCallStarted:
    """A complete call is about to be decided and run. ``waiting``: the gate asks the person
    first (a permission window opens); ``ToolCallApproved`` or a denied ``ToolCallFinished``
    follows."""

    id: str
    name: str
    input: JsonObject
    depth: int = 0
    waiting: bool = False


@dataclass(frozen=True)
class ToolCallApproved:
    """The person allowed a call that was ``waiting``: it runs now."""

    id: str
    name: str
    depth: int = 0


@dataclass(frozen=True)
class ToolCallFinished:
    """A call's result as the model got it; ``view``: how the tool asks it to be shown (None:
    plain text, as for a result kept on disk, whose stub is what the model got)."""

    id: str
    name: str
    result: ToolResult
    denied: bool = False
    depth: int = 0
    view: ResultView | None = None


@dataclass(frozen=True)
class TodosChanged:
    """``todo_write`` replaced the session's to-do list: the faces show ``todos`` (the app in its
    block above the prompt, print mode as one stderr line)."""

    todos: TodoList
    depth: int = 0


@dataclass(frozen=True)
class MemorySubmitted:
    job_id: str


@dataclass(frozen=True)
class ContextUsage:
    """How full the model's window is: the last request's input tokens, or the estimate of the
    next one after a compaction."""

    tokens: int
    window: int


@dataclass(frozen=True)
class Compacting:
    """A compaction is starting (a summary request can take a few seconds)."""

    reason: str  # "auto" | "manual" | "overflow"


@dataclass(frozen=True)
class Compacted:
    """What a compaction did. ``summarised``: messages replaced by the summary (0: the lossless
    stage was enough); ``offloaded``/``offloaded_bytes``: tool results moved to disk;
    ``requests``: summary requests made; ``before``/``after``: estimated input tokens.
    ``error``: why the summary failed (the conversation was left as it was)."""

    reason: str
    summarised: int = 0
    offloaded: int = 0
    offloaded_bytes: int = 0
    requests: int = 0
    before: int = 0
    after: int = 0
    window: int = 0
    error: str = ""

    def describe(self) -> str:
        if self.error:
            return f"could not compact the conversation: {self.error}"
        parts = []
        if self.summarised:
            parts.append(
                f"compacted {self.summarised} message{'s' if self.summarised != 1 else ''} into a summary"
            )
        if self.offloaded_bytes:
            parts.append(f"{format_bytes(self.offloaded_bytes)} of tool output kept on disk")
        if not parts:
            return "nothing to compact"
        window = max(self.window, 1)
        return "; ".join(parts) + f" (context {100 * self.before // window}% → {100 * self.after // window}%)"


@dataclass(frozen=True)
class RunStop:
    status: RunStatus
    message: str = ""
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    job_id: str | None = None
    text: str = ""  # the final answer's text


@dataclass(frozen=True)
class AnswerDone:
    """The top-level answer is complete: ``shown`` is called once its last words are drawn."""

    shown: Callable[[], None]


RunEvent = (
    TextDelta
    | ThinkingDelta
    | ToolUseStart
    | ToolUseArgs
    | UsageEvent
    | Retrying
    | RequestStarted
    | ToolCallStarted
    | ToolCallApproved
    | ToolCallFinished
    | TodosChanged
    | MemorySubmitted
    | RunStop
    | ContextUsage
    | Compacting
    | Compacted
    | AnswerDone
)
OnEvent = Callable[[RunEvent], None]
# Done when the face shows the answer's end (the last words on screen, stdout flushed).
AnswerShown = Callable[[], Awaitable[None]]


def posting_answer_done(emit: OnEvent) -> AnswerShown:
    """A hook for a face whose drawing follows its events in order (the App's message queue): it
    emits ``AnswerDone`` behind the answer's events and is done when the face calls ``shown``."""

    async def answer_shown() -> None:
        shown: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def done() -> None:
            if not shown.done():
                shown.set_result(None)

        emit(AnswerDone(done))
        await shown

    return answer_shown


async def wait_shown(hook: AnswerShown | None, timeout: float) -> None:
    """Until ``hook`` is done, at most ``timeout`` seconds. A hook that fails, is cancelled or
    hangs only ends the wait early or late: what follows (the turn's job) never depends on it.
    Cancelling the caller still cancels (the hook with it)."""
    if hook is None:
        return
    try:
        task = asyncio.ensure_future(hook())
    except Exception:
        log.debug("the answer_shown hook failed", exc_info=True)
        return
    try:
        await asyncio.wait({task}, timeout=timeout)
    finally:
        if not task.done():
            task.cancel()
    if task.done() and not task.cancelled() and task.exception() is not None:
        log.debug("the answer_shown hook failed", exc_info=task.exception())


async def run_whole(step: Awaitable[_T]) -> _T:
    """``step``'s result, with every cancel that comes meanwhile waited out and then spent: for a
    step whose half would leave a contradiction behind (a turn closed as cancelled whose job was
    spooled, or closed twice). The caller goes on as if no cancel had come."""
    task = asyncio.ensure_future(step)
    cancels = 0
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.cancelled():
                raise
            cancels += 1
    current = asyncio.current_task()
    if current is not None:
        for _ in range(cancels):
            current.uncancel()
    return result


def internal_error(err: BaseException) -> str:
    """The one line a Run's own failure stops with (credentials redacted: it is shown and logged)."""
    return redact(f"internal error: {type(err).__name__}: {err}")


def stop_message(reason: str | None) -> str:
    """The one line a ``stopped`` RunStop carries for the model's stop reason."""
    return {
        "max_tokens": "the answer was cut off: the response reached its max_tokens limit",
        "refusal": "the model declined to answer",
        "pause_turn": "the model paused its turn",
        "model_context_window_exceeded": "the conversation no longer fits the model's context window",
    }.get(reason or "", f"the model stopped ({reason})")

"""Long sessions as a Run meets them: the usage anchor, the estimate of the next request, and the
two stages that keep the conversation inside the model's window (the lossless move of tool
results to disk, then the summary of older turns by the main model). The pure parts are in
app/agent/conversation/compaction.py; this drives them and makes the summary requests.

A summary request is never a turn: it is never submitted to memory, and it does not think (a
summary needs the conversation, not a budget of thinking on top of it).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass

from app.agent.conversation import compaction as cmp
from app.agent.conversation.blocks import Message, TextBlock, scrub_text
from app.agent.model.provider import (
    COMPLETED_STOPS,
    ErrorEvent,
    ModelRequest,
    Provider,
    Retrying,
    Stop,
    TextDelta,
    Usage,
    UsageEvent,
)
from app.agent.tools import ToolParam, ToolResult
from app.agent.turn.events import Compacted, Compacting, ContextUsage, OnEvent
from app.agent.turn.turn_log import TurnLog

__all__ = [
    "Compactor",
    "ContextFull",
    "ContextSettings",
    "SummaryFailed",
    "request_summary",
    "summary_request",
]

log = logging.getLogger(__name__)


@dataclass
class ContextSettings:
    """The model's window (tokens), the share of it past which the conversation is compacted, the
    size (bytes) past which a new tool result goes to disk, and where results are kept (None:
    nowhere, a sub-agent)."""

    window: int = 200_000
    compact_at: float = 0.8
    offload_bytes: int = 32 * 1024
    results: cmp.ResultStore | None = None


class ContextFull(Exception):
    """Even compacting cannot make the request fit the window; the message says what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SummaryFailed(Exception):
    """A summary request gave no usable summary; ``reason`` says why in one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def summary_request(
    model: str, max_tokens: int, previous: str | None, chunk: str, focus: str, part: tuple[int, int]
) -> ModelRequest:
    """One summary request: the chunk (part ``k`` of ``n``) merged into the summary so far."""
    prompt = cmp.summary_prompt(previous, chunk, focus, part)
    return ModelRequest(
        model=model,
        system=[TextBlock(text=cmp.SUMMARY_SYSTEM)],
        messages=[Message(role="user", content=[TextBlock(text=prompt)])],
        max_tokens=min(max_tokens, 8_000),
    )


async def request_summary(
    provider: Provider, request: ModelRequest, on_usage: Callable[[UsageEvent], None]
) -> str:
    """Stream one summary request; its text (a response cut at ``max_tokens`` still counts).
    Raises :class:`SummaryFailed`. A retried attempt's text is void."""
    parts: list[str] = []
    async for ev in provider.stream(request):
        if isinstance(ev, TextDelta):
            parts.append(ev.text)
        elif isinstance(ev, Retrying):
            parts.clear()
        elif isinstance(ev, UsageEvent):
            on_usage(ev)
        elif isinstance(ev, ErrorEvent):
            raise SummaryFailed(ev.message)
        elif isinstance(ev, Stop):
            text = scrub_text("".join(parts)).strip()
            if ev.reason not in COMPLETED_STOPS and ev.reason != "max_tokens":
                raise SummaryFailed(f"the summary request stopped ({ev.reason})")
            if not text:
                raise SummaryFailed("the summary request returned no text")
            return text
    raise SummaryFailed("the summary stream ended without a response")


class Compactor:
    """The conversation of ``log`` kept inside the window of ``settings``. ``system``: the system
    prompt as sent (the base, then the summary of the compacted part); ``tools``: the request's
    tools, measured in the estimate; ``rebuild``: a new base system prompt after a summary (None:
    keep the one there is)."""

    def __init__(
        self,
        log: TurnLog,
        settings: ContextSettings,
        base_system: list[TextBlock],
        tools: Callable[[], list[ToolParam]],
        rebuild: Callable[[], list[TextBlock] | None],
    ) -> None:
        self.log, self.settings, self._tools, self._rebuild = log, settings, tools, rebuild
        self.measured_chars: int | None = None  # the conversation's size at the last estimate()
        # A restored session goes on from its last usage anchor and its summary.
        anchor = getattr(log.session, "anchor", None)
        self.anchor: cmp.Anchor | None = cmp.Anchor(*anchor) if anchor else None
        self.summary: str | None = getattr(log.session, "summary", None)
        self.base_system = base_system
        self.system = cmp.with_summary(base_system, self.summary)

    @property
    def threshold(self) -> int:
        """Input tokens past which the conversation is compacted before a request."""
        return int(self.settings.window * self.settings.compact_at)

    def set_system(self, system: list[TextBlock]) -> None:
        """A new system prompt (the summary of a compacted part stays after it)."""
        self.base_system = system
        self.system = cmp.with_summary(system, self.summary)

    def estimate(self) -> int:
        """The next request's input tokens (the usage anchor plus what came since, chars / 4)."""
        tools = self._tools()
        # Kept for the request that follows fit(): a long conversation is serialised once per
        # request to be measured, not twice (hundreds of kilobytes of JSON near the window).
        conversation = self.log.conversation
        self.measured_chars = cmp.messages_chars(conversation)
        return cmp.estimate_tokens(self.anchor, self.system, tools, conversation, self.measured_chars)

    async def anchor_at(self, u: Usage, chars: int, emit: OnEvent) -> None:
        """The usage of a request that carried ``chars`` of conversation: the new anchor."""
        tokens = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
        if tokens <= 0:
            return
        self.anchor = cmp.Anchor(tokens, chars)
        emit(ContextUsage(tokens, self.settings.window))
        session = self.log.session
        if session is not None:
            with contextlib.suppress(Exception):  # a log that cannot be written never fails a turn
                await self.log.io(session.record_usage, tokens, chars)

    async def offload_new(self, result: ToolResult) -> ToolResult:
        """A result over ``offload_bytes`` goes to disk; the conversation gets its head, tail and
        a reference (the lossless stage, for every new result)."""
        store = self.settings.results
        if store is None or len(result.content.encode("utf-8", "replace")) <= self.settings.offload_bytes:
            return result
        try:
            rid = await asyncio.to_thread(store.put, result.content)
        except OSError as e:
            log.warning("could not keep a large tool result on disk: %s", e)
            return result
        # Only the text moves to disk: the result's images, its cost and its hooks' times stay with
        # its stub; the screen shows the stub, as the model gets it.
        return result.model_copy(update={"content": cmp.result_stub(result.content, rid), "view": None})

    def too_large(self, reason: str) -> str:
        return cmp.too_large(reason, self.log.conversation, self.log.turn_start, self.settings.window)

    async def fit(
        self,
        provider: Provider,
        model: tuple[str, int],
        emit: OnEvent,
        *,
        reason: str = "auto",
        force: bool = False,
        focus: str = "",
    ) -> bool:
        """Before a request: when the estimate passes the threshold (or ``force``), move older tool
        results to disk, then summarise older turns (with ``model``: name, max tokens) if that was
        not enough. Returns whether the conversation is now within the threshold. Raises
        ContextFull when even that cannot make it fit the window."""
        before = self.estimate()
        if before < self.threshold and not force:
            return True
        emit(Compacting(reason))
        offloaded, moved = await self._offload_old(before, force)
        # Earlier turns' thinking goes too (the API allows it; the current loop's stays). The log
        # keeps it: a restored session has it back until its next compaction.
        cmp.drop_old_thinking(self.log.conversation, self.log.turn_start)
        after = self.estimate()
        summarised, requests, error = 0, 0, ""
        if after >= self.threshold or reason in ("manual", "overflow"):
            try:
                # Asked for by the person, or refused by the API (the window is smaller than the
                # estimate thought): everything but the last turn is summarised.
                summarised, requests = await self._summarise(
                    provider, model, emit, focus, keep_recent=reason == "auto"
                )
            except SummaryFailed as e:
                error = e.reason
            after = self.estimate()
        window = self.settings.window
        emit(Compacted(reason, summarised, offloaded, moved, requests, before, after, window, error))
        emit(ContextUsage(after, window))
        if after >= window:
            raise ContextFull(self.too_large(cmp.does_not_fit(after, window, error)))
        return after < self.threshold

    async def _offload_old(self, before: int, force: bool) -> tuple[int, int]:
        """Older results to disk (forced, by the person or by the API's refusal: every one of them);
        (results moved, bytes moved)."""
        store = self.settings.results
        if store is None:
            return 0, 0
        target = int(self.threshold * 0.7)  # room for a few requests before the next compaction
        needed = 1 << 62 if force else max(0, before - target) * cmp.CHARS_PER_TOKEN
        offloaded, moved = await asyncio.to_thread(cmp.offload_old, self.log.conversation, store, needed)
        session = self.log.session
        if offloaded and session is not None:
            with contextlib.suppress(Exception):
                await self.log.io(session.record_offloads, offloaded)
        return len(offloaded), moved

    async def _summarise(
        self, provider: Provider, model: tuple[str, int], emit: OnEvent, focus: str, *, keep_recent: bool
    ) -> tuple[int, int]:
        """Replace the older turns by a summary (the lossy stage). Returns (messages summarised,
        summary requests made); (0, 0) when there is nothing older than the turns kept.
        ``keep_recent``: recent turns that fit 40 % of the threshold stay verbatim too."""
        conv, turn_start = self.log.conversation, self.log.turn_start
        keep_chars = int(self.threshold * 0.4) * cmp.CHARS_PER_TOKEN if keep_recent else 0
        k = cmp.split_for_summary(conv, keep_chars, turn_start)
        if k <= 0:
            return 0, 0
        # Bounded chunks: a summary request must itself fit the window.
        chunk_chars = max(8_000, int(self.settings.window * 0.5) * cmp.CHARS_PER_TOKEN)
        chunks = cmp.transcript_chunks(conv[:k], chunk_chars)
        summary = self.summary
        for i, chunk in enumerate(chunks, 1):
            request = summary_request(model[0], model[1], summary, chunk, focus, (i, len(chunks)))
            # It costs like any request: its usage is told with the Run's depth.
            summary = await request_summary(provider, request, lambda ev: emit(dataclasses.replace(ev)))
        kept = cmp.rebuilt(conv[k:])
        # The turn in progress (at or after k) keeps its place relative to the verbatim part.
        await self.log.replace(
            summary or "",
            kept,
            max(0, turn_start - k) if turn_start is not None else None,
            summarised=k,
            requests=len(chunks),
        )
        self.summary, self.anchor = summary, None
        self.set_system(self._rebuild() or self.base_system)
        return k, len(chunks)

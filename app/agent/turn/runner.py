"""The Runner: one user turn = one Run of the model/tool loop.

- The conversation length is recorded before the user message (``start_len``).
- A response with tool calls runs them and goes on, whatever its stop reason says (some
  compatible servers send ``end_turn`` with calls), unless ``max_tokens`` cut it: cut calls are
  dropped. Normal completion of the **top-level** agent (a response with no tool calls whose
  stop reason is ``end_turn`` or ``stop_sequence``) waits (``answer_shown_s`` at most) for the
  face's ``answer_shown`` hook (the answer's end is drawn before any memory work), then submits
  ``conversation[start_len:]`` to the memory Manager, and only then delivers the stop event.
- Errors, other stop reasons, cancellation, ``--max-iterations`` stops and sub-agent runs never
  reach memory. An unfinished turn is closed by the conversation rules (``turn_closing``).
- Text entering the conversation (the user's words, tool results, the model's tool calls) is
  scrubbed of undecodable characters, so one bad byte cannot break every later request.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from app.agent.conversation import compaction as cmp
from app.agent.conversation.messages import TurnMark, drop_turn, push_message, scrub, scrub_text, turn_closing
from app.agent.memory_bridge.heads import memory_heads, recalled_in
from app.agent.memory_bridge.ports import ConversationLog, IndexSource, RecallSource, TurnSink
from app.agent.memory_bridge.receipts import Receipt, end_turn_with
from app.agent.memory_bridge.turn_memory import text_of, turn_for_memory
from app.agent.model.provider import (
    COMPLETED_STOPS,
    ErrorEvent,
    ModelRequest,
    Provider,
    Retrying,
    Stop,
    TextDelta,
    ToolUseArgs,
    ToolUseComplete,
    ToolUseStart,
    Usage,
    UsageEvent,
    is_overflow,
)
from app.agent.tools import (
    TOOL_SPECS,
    PermissionGate,
    ToolContext,
    ToolResult,
    api_tools,
    refusal,
)
from app.agent.turn import tool_calls
from app.agent.turn.events import (
    AnswerShown,
    Compacted,
    Compacting,
    ContextUsage,
    MemorySubmitted,
    OnEvent,
    RequestStarted,
    RunEvent,
    RunStatus,
    RunStop,
    ToolCallFinished,
    ToolCallStarted,
    run_whole,
    stop_message,
    wait_shown,
)
from app.agent.turn.system_prompt import build_system
from app.agent.turn.tool_calls import bound_inputs
from memory.text.redact import redact

if TYPE_CHECKING:
    from app.agent.extensions.extensions import Extensions

log = logging.getLogger(__name__)

MAX_STOP_BLOCKS = (
    3  # a Stop hook that keeps blocking sends the model on this often in a turn, then the turn ends
)


class PromptRefused(ValueError):
    """A UserPromptSubmit hook refused the prompt (the message says why); nothing was sent."""


# Stop reasons whose tool calls are complete and must run (``end_turn``: some compatible servers).
TOOL_CALL_STOPS = COMPLETED_STOPS | {"tool_use"}


class _Overflow(Exception):
    """The API refused the request as larger than the model's context window."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Halt(Exception):
    def __init__(self, status: RunStatus, message: str, stop_reason: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.stop_reason = stop_reason


class Runner:
    """A conversation with the main model, run one turn at a time."""

    def __init__(
        self,
        *,
        provider: Provider,
        model: str,
        tool_ctx: ToolContext,
        gate: PermissionGate,
        system: list[dict[str, Any]] | None = None,
        conversation: list[dict[str, Any]] | None = None,
        memory: IndexSource | None = None,
        manager: TurnSink | None = None,  # where completed turns go
        session: ConversationLog | None = None,  # the log that owns the conversation
        max_iterations: int = 50,
        max_tokens: int = 16000,
        is_subagent: bool = False,
        tools: Iterable[str] | None = None,
        depth: int = 0,
        shown_index: str | None = None,
        context_window: int = 200_000,
        compact_at: float = 0.8,
        offload_bytes: int = 32 * 1024,
        results: cmp.ResultStore | None = None,
        recall: RecallSource | None = None,
        ext: Extensions | None = None,  # MCP tools, hooks (the rules are the gate's)
    ) -> None:
        self.provider, self.model, self.tool_ctx, self.gate = provider, model, tool_ctx, gate
        self.memory, self.manager, self.session = memory, manager, session
        self.max_iterations, self.max_tokens = max_iterations, max_tokens
        self.is_subagent, self.depth = is_subagent, depth
        self.tool_names = list(tools) if tools is not None else list(TOOL_SPECS)
        self.ext = ext
        self.session_context = ""  # what SessionStart hooks said: at the head of the next Run
        self._stop_blocks = 0  # how often a Stop hook sent the model on in this turn
        # With a session, the session's messages are the conversation (one list, one set of rules).
        self._own: list[dict[str, Any]] = []
        for m in (conversation or []) if session is None else []:
            push_message(self._own, m)
        # The index the model has seen: in full in the system prompt at session start, then as update
        # diffs at the head of later Runs (the cached prefix stays valid); read off the loop by the Runtime.
        self.shown_index = (
            shown_index if shown_index is not None else memory.merged_index() if memory is not None else ""
        )
        # Long sessions: the system prompt without the summary, when to compact, where big results go.
        self.base_system = (
            system if system is not None else build_system(tool_ctx.workspace, self.shown_index)
        )
        self.context_window, self.compact_at, self.offload_bytes = context_window, compact_at, offload_bytes
        self.results = results
        self._measured_chars: int | None = None  # the conversation's size at the last estimate()
        # A restored session goes on from its last usage anchor and its summary.
        anchor = getattr(session, "anchor", None)
        self._anchor: cmp.Anchor | None = cmp.Anchor(*anchor) if anchor else None
        self._summary: str | None = getattr(session, "summary", None)
        self.system = cmp.with_summary(self.base_system, self._summary)
        self._running = False
        self._answer_shown: AnswerShown | None = None
        self._io_pending: asyncio.Future[Any] | None = None
        self._index_before: str | None = None
        self._turn_start: int | None = None  # where the Run's turn begins in the conversation
        self._mark: TurnMark | None = None
        self.receipt = Receipt()  # the turn's memory receipt (a sub-agent adds to its parent's)
        # level/filename -> sha of each card recalled in this conversation (app/agent/memory_bridge/heads.py).
        self.recall, self.recalled, self._recalled_before = (
            recall,
            recalled_in(self.conversation),
            dict[str, str](),
        )

    @property
    def conversation(self) -> list[dict[str, Any]]:
        return self.session.messages if self.session is not None else self._own

    @property
    def running(self) -> bool:
        return self._running

    @property
    def session_id(self) -> str:
        return str(getattr(self.session, "id", "") or "")

    def subagent(self) -> Runner:
        sub = type(self)(**tool_calls.subagent_kwargs(self))  # for ``task``
        sub.tool_input_bytes = self.tool_input_bytes
        return sub

    def _tools(self) -> list[dict[str, Any]]:
        """The built-in tools, then the ready MCP servers' (a sub-agent: their read-only ones)."""
        extra = self.ext.api_tools(read_only=self.is_subagent) if self.ext is not None else []
        return api_tools(self.tool_names) + extra

    @property
    def threshold(self) -> int:
        """Input tokens past which the conversation is compacted before a request."""
        return int(self.context_window * self.compact_at)

    def set_system(self, system: list[dict[str, Any]]) -> None:
        """A new system prompt (the summary of a compacted part stays after it)."""
        self.base_system = system
        self.system = cmp.with_summary(system, self._summary)

    def estimate(self) -> int:
        """The next request's input tokens (the usage anchor plus what came since, chars / 4)."""
        tools = self._tools()
        # Kept for the request that follows _fit: a long conversation is serialised once per
        # request to be measured, not twice (hundreds of kilobytes of JSON near the window).
        self._measured_chars = cmp.messages_chars(self.conversation)
        return cmp.estimate_tokens(self._anchor, self.system, tools, self.conversation, self._measured_chars)

    # -- one Run ------------------------------------------------------------------------------

    answer_shown_s = 0.5  # the longest a completed turn's job waits for its answer to be shown
    # A tool call whose input passes this (bytes of JSON) is refused; the Runtime sets it from the
    # settings (``tool_calls.input_limit``).
    tool_input_bytes = 256 * 1024

    async def run(
        self, user_text: str, on_event: OnEvent | None = None, answer_shown: AnswerShown | None = None
    ) -> RunStop:
        """Run one turn. Raises RuntimeError if a Run of this Runner is still in progress, and
        ValueError for an empty prompt (the API refuses an empty message). ``answer_shown``: done
        once the face shows a completed answer's end (awaited before the job is spooled)."""
        if not user_text.strip():
            raise ValueError("the prompt is empty")
        if self._running:
            raise RuntimeError(
                "a turn is already running in this conversation; wait for it or cancel it first"
            )
        self._running, self._answer_shown = True, answer_shown
        try:
            return await self._run(scrub_text(user_text), on_event or (lambda _e: None))
        finally:
            self._running, self._answer_shown = False, None

    async def _run(self, user_text: str, emit: OnEvent) -> RunStop:
        usage = Usage()
        content: list[dict[str, Any]] = []
        self._index_before, self._stop_blocks = self.shown_index, 0
        self._recalled_before = dict(self.recalled)
        hooked = await self._prompt_hooks(user_text)  # first: a refused prompt leaves nothing behind
        heads = [*(await self._memory_heads(user_text)), *hooked]
        content.extend({"type": "text", "text": h} for h in heads if h)
        content.append({"type": "text", "text": user_text})
        self._mark = TurnMark(self.conversation)
        # The user message may join a trailing user message (an interrupted turn's results):
        # the turn's messages start where it landed. One trip to the session's thread for both.
        message = {"role": "user", "content": content}
        if self.session is not None:
            self._turn_start = int(await self._io(self.session.open_turn, user_text, message))
        else:
            self._turn_start = await self._append(message)
        try:
            stop = await self._loop(usage, emit)
        except asyncio.CancelledError:
            await asyncio.shield(self._end_turn("cancelled", message="cancelled by the user"))
            emit(RunStop("cancelled", "cancelled by the user", usage=usage))
            raise
        except _Halt as h:
            await self._end_turn(h.status, message=h.message)
            stop = RunStop(h.status, h.message, h.stop_reason, usage=usage)
        except Exception as e:
            # The stop event carries the one-line reason; the traceback is for debugging only.
            log.debug("run failed", exc_info=True)
            msg = redact(f"internal error: {type(e).__name__}: {e}")
            await self._end_turn("error", message=msg)
            stop = RunStop("error", msg, usage=usage)
        self._turn_start = None
        emit(stop)
        return stop

    async def _loop(self, usage: Usage, emit: OnEvent) -> RunStop:
        tools = self._tools()
        for iteration in range(1, self.max_iterations + 1):
            emit(RequestStarted(iteration, self.depth))
            chars = None
            if not self.is_subagent:
                await self._fit(emit)
                chars = self._measured_chars  # the conversation as _fit left it, measured last
            try:
                stop = await self._request(tools, usage, emit, chars)
            except _Overflow as e:
                # The estimate was short (or the window smaller than configured): compact and
                # send again, once; a second refusal ends the turn with the reason.
                if self.is_subagent or not await self._fit(emit, reason="overflow", force=True):
                    raise _Halt("error", self._too_large(e.message)) from None
                try:
                    stop = await self._request(tools, usage, emit, self._measured_chars)
                except _Overflow as again:  # the API's own reason, not an "internal error"
                    raise _Halt("error", self._too_large(again.message)) from None
            blocks, oversized = bound_inputs(scrub(stop.content)[0], self.tool_input_bytes)
            tool_calls = [b for b in blocks if b.get("type") == "tool_use"]
            if tool_calls and stop.reason in TOOL_CALL_STOPS:
                await self._append({"role": "assistant", "content": blocks})
                await self._run_tools(tool_calls, emit, oversized)
                continue
            # No tool calls to run: any tool_use block here is cut short (max_tokens) and
            # must not stay in the conversation without a result.
            kept = [b for b in blocks if b.get("type") != "tool_use"] or [
                {"type": "text", "text": "[no text]"}
            ]
            await self._append({"role": "assistant", "content": kept})
            text = text_of(kept)
            if stop.reason in COMPLETED_STOPS and await self._stop_hook_goes_on(kept):
                continue
            if stop.reason in COMPLETED_STOPS:
                if not self.is_subagent:  # the answer's end on screen first, then the spool's fsync
                    await wait_shown(self._answer_shown, self.answer_shown_s)
                # The answer is whole: its job and the turn's end are one step a cancel waits out.
                job_id = await run_whole(self._commit(stop.reason))
                if job_id:
                    emit(MemorySubmitted(job_id))
                return RunStop("completed", stop_reason=stop.reason, usage=usage, job_id=job_id, text=text)
            await self._end_turn("stopped", stop_reason=stop.reason)
            return RunStop("stopped", stop_message(stop.reason), stop.reason, usage=usage, text=text)
        raise _Halt(
            "max_iterations", f"stopped after {self.max_iterations} model requests (--max-iterations)"
        )

    async def _request(
        self, tools: list[dict[str, Any]], usage: Usage, emit: OnEvent, chars: int | None = None
    ) -> Stop:
        request = ModelRequest(
            model=self.model,
            system=self.system,
            messages=self.conversation,
            tools=tools,
            max_tokens=self.max_tokens,
        )
        if self.is_subagent:
            chars = 0
        elif chars is None:
            chars = cmp.messages_chars(request.messages)
        async for ev in self.provider.stream(request):
            if isinstance(ev, TextDelta | Retrying | ToolUseStart | ToolUseArgs):
                emit(
                    dataclasses.replace(ev, depth=self.depth) if self.depth else ev
                )  # a copy per token costs
            elif isinstance(ev, UsageEvent):
                usage.add(ev.usage)
                emit(dataclasses.replace(ev, depth=self.depth))
                if not self.is_subagent:
                    await self._anchor_at(ev.usage, chars, emit)
            elif isinstance(ev, Stop):
                return ev
            elif isinstance(ev, ErrorEvent):
                if is_overflow(ev.message):
                    raise _Overflow(ev.message)
                raise _Halt("error", ev.message)
            elif isinstance(ev, ToolUseComplete):
                pass  # tools run once the response is complete; the UI shows ToolCallStarted
        raise _Halt("error", "the model stream ended without a response")

    # -- tools --------------------------------------------------------------------------------

    async def _run_tools(self, calls: list[dict[str, Any]], emit: OnEvent, oversized: dict[str, str]) -> None:
        results: list[dict[str, Any]] = []
        try:
            for call in calls:
                name, tool_input, call_id = call.get("name", ""), call.get("input") or {}, call.get("id", "")
                # Refused before the gate (no one is asked): an oversized input, a write the tool would refuse.
                refused = oversized.get(call_id) or (
                    await refusal(name, tool_input, self.tool_ctx) if name in self.tool_names else None
                )
                waiting = refused is None and self._asks(name, tool_input)
                emit(ToolCallStarted(call_id, name, tool_input, self.depth, waiting))
                result, denied = await self._run_one(name, tool_input, call_id, emit, waiting, refused)
                result = result.model_copy(update={"content": scrub_text(result.content)})
                if result.card is not None:
                    self.receipt.saw(result.card)
                # What read_result gives back is already on disk and bounded in characters (not in
                # bytes: 24,000 CJK characters pass 32 KiB): storing it again would answer the model
                # with another stub instead of the part it asked for.
                kept = result if name == "read_result" else await self._offload_new(result)
                results.append(tool_calls.result_block(call_id, kept))
                # The person sees what the model sees: a stored result's head, tail and reference.
                emit(ToolCallFinished(call_id, name, kept, denied, self.depth, kept.view))
        except asyncio.CancelledError:
            # Completed calls keep their results; the session rules answer the rest.
            if results:
                await asyncio.shield(self._append({"role": "user", "content": results}))
            raise
        await self._append({"role": "user", "content": results})

    def _asks(self, name: str, tool_input: Any) -> bool:
        return tool_calls.asks(self, name, tool_input)

    async def _run_one(
        self,
        name: str,
        tool_input: Any,
        call_id: str,
        emit: OnEvent,
        waiting: bool = False,
        refused: str | None = None,
    ) -> tuple[ToolResult, bool]:
        return await tool_calls.run_call(self, name, tool_input, call_id, emit, waiting, refused)

    # -- hooks around the turn (app/agent/extensions/hooks.py) -------------------------------------------------

    async def _prompt_hooks(self, user_text: str) -> list[str]:
        """What SessionStart and UserPromptSubmit hooks add at the head of the message; a
        UserPromptSubmit hook that exits 2 refuses the prompt (PromptRefused, its reason)."""
        heads, self.session_context = [self.session_context], ""
        if self.ext is not None and not self.is_subagent and self.ext.hooks.hooks:
            out = await self.ext.hook("UserPromptSubmit", session_id=self.session_id, prompt=user_text)
            if out.blocked:
                raise PromptRefused(f"the prompt was refused by a hook: {out.reason or 'no reason given'}")
            heads.append(out.context)
        return heads

    async def _stop_hook_goes_on(self, kept: list[dict[str, Any]]) -> bool:
        """A Stop hook that exits 2 sends the model on with its reason (at most three times a turn)."""
        if (
            self.ext is None
            or self.is_subagent
            or not self.ext.hooks.hooks
            or self._stop_blocks >= MAX_STOP_BLOCKS
        ):
            return False
        out = await self.ext.hook("Stop", session_id=self.session_id)
        if not out.blocked:
            return False
        self._stop_blocks += 1
        await self._append({"role": "assistant", "content": kept})
        await self._append(
            {"role": "user", "content": [{"type": "text", "text": f"[Stop hook] {out.reason}"}]}
        )
        return True

    # -- long sessions (app/agent/conversation/compaction.py) ----------------------------------------------------

    async def _anchor_at(self, u: Usage, chars: int, emit: OnEvent) -> None:
        tokens = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
        if tokens <= 0:
            return
        self._anchor = cmp.Anchor(tokens, chars)
        emit(ContextUsage(tokens, self.context_window))
        if self.session is not None:
            with contextlib.suppress(Exception):  # a log that cannot be written never fails a turn
                await self._io(self.session.record_usage, tokens, chars)

    async def _offload_new(self, result: ToolResult) -> ToolResult:
        """A result over ``offload_bytes`` goes to disk; the conversation gets its head, tail and
        a reference (the lossless stage, for every new result)."""
        if self.results is None or len(result.content.encode("utf-8", "replace")) <= self.offload_bytes:
            return result
        try:
            rid = await asyncio.to_thread(self.results.put, result.content)
        except OSError as e:
            log.warning("could not keep a large tool result on disk: %s", e)
            return result
        return ToolResult(
            content=cmp.result_stub(result.content, rid),
            is_error=result.is_error,
            hook_s=result.hook_s,
            hook_failed=result.hook_failed,
        )

    async def _fit(
        self, emit: OnEvent, *, reason: str = "auto", force: bool = False, focus: str = ""
    ) -> bool:
        """Before a request: when the estimate passes the threshold (or ``force``), move older tool
        results to disk, then summarise older turns if that was not enough. Returns whether the
        conversation is now within the threshold. Raises _Halt when even that cannot make it fit
        the window."""
        before = self.estimate()
        if before < self.threshold and not force:
            return True
        emit(Compacting(reason))
        target = int(self.threshold * 0.7)  # room for a few requests before the next compaction
        offloaded: list[tuple[str, str]] = []
        moved = 0
        if self.results is not None:
            # Forced (by the person, or by the API's refusal): every older result goes to disk.
            needed = 1 << 62 if force else max(0, before - target) * cmp.CHARS_PER_TOKEN
            offloaded, moved = await asyncio.to_thread(
                cmp.offload_old, self.conversation, self.results, needed
            )
            if offloaded and self.session is not None:
                with contextlib.suppress(Exception):
                    await self._io(self.session.record_offloads, offloaded)
        after = self.estimate()
        summarised, requests, error = 0, 0, ""
        if after >= self.threshold or reason in ("manual", "overflow"):
            try:
                # Asked for by the person, or refused by the API (the window is smaller than the
                # estimate thought): everything but the last turn is summarised.
                summarised, requests = await self._summarise(emit, focus, keep_recent=reason == "auto")
            except cmp.SummaryFailed as e:
                error = e.reason
            after = self.estimate()
        done = Compacted(
            reason, summarised, len(offloaded), moved, requests, before, after, self.context_window, error
        )
        emit(done)
        emit(ContextUsage(after, self.context_window))
        if after >= self.context_window:
            raise _Halt("error", self._too_large(cmp.does_not_fit(after, self.context_window, error)))
        return after < self.threshold

    def _too_large(self, reason: str) -> str:
        return cmp.too_large(reason, self.conversation, self._turn_start, self.context_window)

    async def _summarise(self, emit: OnEvent, focus: str, *, keep_recent: bool = True) -> tuple[int, int]:
        """Replace the older turns by a summary (the lossy stage). Returns (messages summarised,
        summary requests made); (0, 0) when there is nothing older than the turns kept.
        ``keep_recent``: recent turns that fit 40 % of the threshold stay verbatim too."""
        conv = self.conversation
        keep_chars = int(self.threshold * 0.4) * cmp.CHARS_PER_TOKEN if keep_recent else 0
        k = cmp.split_for_summary(conv, keep_chars, self._turn_start)
        if k <= 0:
            return 0, 0
        # Bounded chunks: a summary request must itself fit the window.
        chunk_chars = max(8_000, int(self.context_window * 0.5) * cmp.CHARS_PER_TOKEN)
        chunks = cmp.transcript_chunks(conv[:k], chunk_chars)
        summary = self._summary
        requests = 0
        for i, chunk in enumerate(chunks, 1):
            request = cmp.summary_request(
                self.model, self.max_tokens, summary, chunk, focus, (i, len(chunks))
            )
            summary = await cmp.request_summary(
                self.provider,
                request,
                lambda ev: emit(dataclasses.replace(ev, depth=self.depth)),  # it costs like any request
            )
            requests += 1
        kept = cmp.rebuilt(conv[k:])
        # The turn in progress (at or after k) keeps its place relative to the verbatim part.
        turn_start = max(0, self._turn_start - k) if self._turn_start is not None else None
        new_base = (
            build_system(self.tool_ctx.workspace, self.shown_index)
            if self.memory is not None
            else self.base_system
        )
        if self.session is not None:
            await self._io(
                self.session.compact, summary or "", kept, turn_start, summarised=k, requests=requests
            )
        else:
            self._own[:] = kept
            if self._mark is not None and turn_start is not None:
                self._mark = TurnMark(self._own[:turn_start])
        if self._turn_start is not None:
            self._turn_start = turn_start
        self._summary = summary
        self._anchor = None
        self.set_system(new_base)
        return k, requests

    async def compact(self, focus: str = "", on_event: OnEvent | None = None) -> Compacted | None:
        """``/compact [focus]`` and print mode's ``--compact``: compact now, between turns."""
        if self._running:
            raise RuntimeError("a turn is running: wait for it or cancel it before compacting")
        emit = on_event or (lambda _e: None)
        seen: list[Compacted] = []

        def keep(ev: RunEvent) -> None:
            if isinstance(ev, Compacted):
                seen.append(ev)
            emit(ev)

        self._running = True
        try:
            await self._fit(keep, reason="manual", force=True, focus=focus)
        except _Halt as h:
            raise RuntimeError(h.message) from None
        finally:
            self._running = False
        return seen[-1] if seen else None

    # -- memory -------------------------------------------------------------------------------

    async def _memory_heads(self, user_text: str) -> tuple[str, str]:
        """The ``<memory-update>`` and ``<memory-recall>`` blocks (a sub-agent gets neither)."""
        if self.is_subagent:
            return "", ""
        if self.memory is None and self.recall is None:
            self.receipt = Receipt(self.shown_index)
            return "", ""
        heads = await memory_heads(self.memory, self.recall, self.shown_index, user_text, self.recalled)
        self.shown_index, self.receipt = heads.shown_index, Receipt(heads.shown_index)
        if self.recall is not None:
            self.receipt.recalled = heads.recalled
        return heads.update, heads.recall

    def reset_index(self, index: str) -> None:
        """The index the model now has in full (a new system prompt)."""
        self.shown_index = index

    async def _commit(self, stop_reason: str | None) -> str | None:
        job_id = await self._submit(self._turn_start or 0)
        await self._end_turn("completed", stop_reason=stop_reason, job=job_id)  # for a rewind to name
        return job_id

    async def _submit(self, start_len: int) -> str | None:
        if self.is_subagent or self.manager is None:
            return None
        turn = turn_for_memory(
            self.conversation[start_len:], getattr(self.session, "id", ""), workspace=self.tool_ctx.workspace
        )
        try:
            job = await self.manager.submit(turn)
        except OSError as e:
            # Memory never blocks an answer; the failure is logged for `memory doctor`.
            log.error("could not spool the memory job: %s", e)
            return None
        return job.id if job is not None else None

    # -- conversation bookkeeping ------------------------------------------------------------

    async def _append(self, message: dict[str, Any]) -> int:
        """Add a message by the conversation rules; returns the index of the message holding it."""
        if self.session is not None:
            return int(await self._io(self.session.append_at, message))
        held, _ = push_message(self._own, message)
        return held if held is not None else len(self._own)

    async def _io(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Session file work off the event loop, in order: a cancel never reorders two writes."""
        pending = self._io_pending
        if pending is not None and not pending.done():
            # A write a cancel left running in its thread: it lands first.
            await asyncio.wait({pending})
        fut = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
        self._io_pending = fut
        return await asyncio.shield(fut)

    async def _end_turn(self, status: str, **info: Any) -> None:
        info = {k: v for k, v in info.items() if v is not None}
        mark = self._mark or TurnMark(self._own)
        if self.session is not None:
            drop = bool(await self._io(end_turn_with, self.session, self.receipt, status, info))
        else:
            closing, drop = turn_closing(self._own, mark, status, str(info.get("message") or ""))
            for m in closing:
                push_message(self._own, m)
            if drop:
                drop_turn(self._own, mark)
        if drop and self._index_before is not None:
            # The dropped turn took its <memory-update> and <memory-recall> blocks with it: the
            # next Run says them again.
            self.shown_index = self._index_before
            self.recalled = self._recalled_before

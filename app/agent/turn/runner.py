"""The Runner: one user turn = one Run of the model/tool loop.

- The Run's prompt (``Prompt``: the person's words, and the files, images and documents that go
  with them) is the turn's user message, after what hooks and memory put at its head.
- A response with tool calls runs them (app/agent/turn/tool_round.py) and goes on, whatever its
  stop reason says (some compatible servers send ``end_turn`` with calls), unless ``max_tokens``
  cut it: cut calls are dropped. Normal completion of the **top-level** agent (a response with no
  tool calls whose stop reason is ``end_turn`` or ``stop_sequence``) waits (``answer_shown_s`` at
  most) for the face's ``answer_shown`` hook (the answer's end is drawn before any memory work),
  then submits the turn's messages to memory, and only then delivers the stop event.
- Errors, other stop reasons, cancellation, ``--max-iterations`` stops and sub-agent runs never
  reach memory. An unfinished turn is closed by the conversation rules (``turn_closing``).
- Before each request the conversation is kept inside the window (app/agent/turn/compactor.py).
- Text entering the conversation (the person's words, hooks' words, tool results) is scrubbed of
  undecodable characters, so one bad byte cannot break every later request; a response's blocks
  come scrubbed from the provider.

Memory and the session log are reached only through their ports (app/agent/memory_bridge/ports.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from app.agent.conversation import compaction as cmp
from app.agent.conversation.blocks import (
    Block,
    Message,
    Prompt,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    scrub_text,
)
from app.agent.memory_bridge.ports import ConversationLog, RecallSource, TurnSink
from app.agent.model.provider import (
    COMPLETED_STOPS,
    ErrorEvent,
    ModelRequest,
    Retrying,
    Stop,
    TextDelta,
    ThinkingDelta,
    ToolUseArgs,
    ToolUseComplete,
    ToolUseStart,
    Usage,
    UsageEvent,
    is_overflow,
)
from app.agent.tools import ToolParam
from app.agent.turn.compactor import Compactor, ContextFull
from app.agent.turn.deps import RunnerDeps
from app.agent.turn.events import (
    AnswerShown,
    Compacted,
    MemorySubmitted,
    OnEvent,
    RequestStarted,
    RunEvent,
    RunStatus,
    RunStop,
    internal_error,
    run_whole,
    stop_message,
    wait_shown,
)
from app.agent.turn.system_prompt import build_system
from app.agent.turn.tool_calls import bound_inputs
from app.agent.turn.tool_round import ToolRound
from app.agent.turn.turn_log import TurnLog

log = logging.getLogger(__name__)

# A Stop hook that keeps blocking sends the model on this often in a turn, then the turn ends.
MAX_STOP_BLOCKS = 3


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


def answer_text(blocks: list[Block]) -> str:
    """The words of a response: its text blocks."""
    return "\n".join(b.text for b in blocks if isinstance(b, TextBlock))


class Runner:
    """A conversation with the main model, run one turn at a time (see ``RunnerDeps``)."""

    # The longest a completed turn's job waits for its answer to be shown.
    answer_shown_s = 0.5

    def __init__(self, deps: RunnerDeps) -> None:
        self.deps = deps
        self.provider, self.model = deps.model.provider, deps.model.model
        self.max_tokens, self.max_iterations = deps.model.max_tokens, deps.model.max_iterations
        # Extended thinking for the next Runs (tokens; 0: off). A Run keeps the value it started
        # with: the API wants one thinking configuration through a tool-use loop.
        self.thinking_budget = deps.model.thinking_budget
        self._thinking = 0
        self.tools, self.tool_ctx, self.gate, self.ext = (
            deps.tools.registry,
            deps.tools.ctx,
            deps.tools.gate,
            deps.tools.ext,
        )
        self.memory, self.depth, self.is_subagent = deps.memory, deps.depth, deps.depth > 0
        # A tool call whose input passes this (bytes of JSON) is refused; a result past
        # ``offload_bytes`` goes to ``results`` (the session's folder).
        self.tool_input_bytes = deps.tools.input_bytes
        self.offload_bytes, self.results = deps.context.offload_bytes, deps.context.results
        self.session_context = ""  # what SessionStart hooks said: at the head of the next Run
        self._stop_blocks = 0  # how often a Stop hook sent the model on in this turn
        self.log = TurnLog(deps.session, deps.conversation)
        system = deps.system if deps.system is not None else self._system()
        self.compactor = Compactor(self.log, deps.context, system, self._tools, self._rebuilt_system)
        self.round = ToolRound(self, self.log, self.compactor, self.memory)
        self._running = False
        self._answer_shown: AnswerShown | None = None

    # -- what tool calls and the faces read of it ---------------------------------------------

    @property
    def conversation(self) -> list[Message]:
        return self.log.conversation

    @property
    def session(self) -> ConversationLog | None:
        return self.log.session

    @property
    def session_id(self) -> str:
        return self.log.session_id

    @property
    def running(self) -> bool:
        return self._running

    @property
    def system(self) -> list[TextBlock]:
        """The system prompt as sent: the base, then the summary of a compacted part."""
        return self.compactor.system

    def set_system(self, system: list[TextBlock]) -> None:
        """A new system prompt (the summary of a compacted part stays after it)."""
        self.compactor.set_system(system)

    @property
    def threshold(self) -> int:
        return self.compactor.threshold

    def estimate(self) -> int:
        return self.compactor.estimate()

    @property
    def shown_index(self) -> str:
        """The index the model has (read off the loop by the Runtime)."""
        return self.memory.shown_index

    def reset_index(self, index: str) -> None:
        """The index the model now has in full (a new system prompt)."""
        self.memory.shown_index = index

    @property
    def recall(self) -> RecallSource | None:
        return self.memory.recall

    @recall.setter
    def recall(self, source: RecallSource | None) -> None:
        self.memory.recall = source

    @property
    def manager(self) -> TurnSink | None:
        """Where completed turns go (None: memory is off)."""
        return self.memory.manager

    @manager.setter
    def manager(self, sink: TurnSink | None) -> None:
        self.memory.manager = sink

    def subagent(self) -> Runner:
        """A sub-agent for ``task`` (``RunnerDeps.for_subagent``)."""
        return type(self)(self.deps.for_subagent(self.model))

    def _tools(self) -> list[ToolParam]:
        """The tools of its registry: the built-ins, then the ready MCP servers' (a sub-agent's
        registry has the read-only ones); those only for plan mode while the mode is plan."""
        planning = self.tool_ctx.planning
        return self.tools.offered(planning is not None and planning()).api()

    def _system(self) -> list[TextBlock]:
        return build_system(self.tool_ctx.workspace, self.memory.shown_index)

    def _rebuilt_system(self) -> list[TextBlock] | None:
        # After a summary the index goes back into the system prompt in full, when memory shows one.
        return self._system() if getattr(self.memory, "index", None) is not None else None

    # -- one Run ------------------------------------------------------------------------------

    async def run(
        self, prompt: Prompt | str, on_event: OnEvent | None = None, answer_shown: AnswerShown | None = None
    ) -> RunStop:
        """Run one turn of ``prompt`` (a str is its words alone). Raises RuntimeError if a Run of
        this Runner is still in progress, and ValueError for an empty prompt (the API refuses an
        empty message). ``answer_shown``: done once the face shows a completed answer's end
        (awaited before the job is spooled)."""
        prompt = Prompt.of(prompt)
        if prompt.empty:
            raise ValueError("the prompt is empty")
        if self._running:
            raise RuntimeError(
                "a turn is already running in this conversation; wait for it or cancel it first"
            )
        self._running, self._answer_shown = True, answer_shown
        try:
            return await self._run(prompt.scrubbed(), on_event or (lambda _e: None))
        finally:
            self._running, self._answer_shown = False, None

    async def _run(self, prompt: Prompt, emit: OnEvent) -> RunStop:
        usage, text = Usage(), prompt.text
        self._stop_blocks, self._thinking = 0, self.thinking_budget
        if not self.is_subagent:
            self.memory.mark()
        hooked = await self._prompt_hooks(text)  # first: a refused prompt leaves nothing behind
        heads = [*(await self._memory_heads(text)), *hooked]
        content: list[Block] = [TextBlock(text=scrub_text(h)) for h in heads if h]
        await self.log.open(text, Message(role="user", content=[*content, *prompt.blocks]))
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
            msg = internal_error(e)
            await self._end_turn("error", message=msg)
            stop = RunStop("error", msg, usage=usage)
        self.log.turn_start = None
        emit(stop)
        return stop

    async def _loop(self, usage: Usage, emit: OnEvent) -> RunStop:
        for iteration in range(1, self.max_iterations + 1):
            emit(RequestStarted(iteration, self.depth))
            # Per request: the mode may change within a Run (a plan approved), and the tools with it.
            stop = await self._fitted_request(self._tools(), usage, emit)
            blocks, oversized = bound_inputs(stop.content, self.tool_input_bytes)
            calls = [b for b in blocks if isinstance(b, ToolUseBlock)]
            if calls and stop.reason in TOOL_CALL_STOPS:
                await self.log.append(Message(role="assistant", content=blocks))
                ending = await self.round.run(calls, emit, oversized, usage)
                if ending is not None:  # a call handed the turn back to the person (print mode's plan)
                    return await self._completed(stop.reason, ending, usage, emit)
                continue
            # No tool calls to run: any tool_use block here is cut short (max_tokens) and
            # must not stay in the conversation without a result.
            kept: list[Block] = [b for b in blocks if not isinstance(b, ToolUseBlock)]
            if all(isinstance(b, ThinkingBlock | RedactedThinkingBlock) for b in kept):
                # Words to keep: thinking alone makes no answer (and a later request may drop it).
                kept.append(TextBlock(text="[no text]"))
            await self.log.append(Message(role="assistant", content=kept))
            text = answer_text(kept)
            if stop.reason in COMPLETED_STOPS and await self._stop_hook_goes_on():
                continue
            if stop.reason in COMPLETED_STOPS:
                return await self._completed(stop.reason, text, usage, emit)
            await self._end_turn("stopped", stop_reason=stop.reason)
            return RunStop("stopped", stop_message(stop.reason), stop.reason, usage=usage, text=text)
        raise _Halt(
            "max_iterations", f"stopped after {self.max_iterations} model requests (--max-iterations)"
        )

    async def _completed(self, stop_reason: str | None, text: str, usage: Usage, emit: OnEvent) -> RunStop:
        """The turn is complete: its answer ``text`` shown, its job spooled, its end recorded."""
        if not self.is_subagent:  # the answer's end on screen first, then the spool's fsync
            await wait_shown(self._answer_shown, self.answer_shown_s)
        # The answer is whole: its job and the turn's end are one step a cancel waits out.
        job_id = await run_whole(self._commit(stop_reason))
        if job_id:
            emit(MemorySubmitted(job_id))
        return RunStop("completed", stop_reason=stop_reason, usage=usage, job_id=job_id, text=text)

    async def _fitted_request(self, tools: list[ToolParam], usage: Usage, emit: OnEvent) -> Stop:
        """One request, the conversation fitted to the window first (the top-level agent). A
        refusal as too large compacts and sends again, once; a second one ends the turn."""
        chars = None
        if not self.is_subagent:
            await self._fit(emit)
            chars = self.compactor.measured_chars  # the conversation as fit() left it, measured last
        try:
            return await self._request(tools, usage, emit, chars)
        except _Overflow as e:
            # The estimate was short (or the window smaller than configured): compact and
            # send again, once; a second refusal ends the turn with the reason.
            if self.is_subagent or not await self._fit(emit, reason="overflow", force=True):
                raise _Halt("error", self.compactor.too_large(e.message)) from None
            try:
                return await self._request(tools, usage, emit, self.compactor.measured_chars)
            except _Overflow as again:  # the API's own reason, not an "internal error"
                raise _Halt("error", self.compactor.too_large(again.message)) from None

    async def _request(self, tools: list[ToolParam], usage: Usage, emit: OnEvent, chars: int | None) -> Stop:
        request = ModelRequest(
            model=self.model,
            system=self.system,
            messages=self.conversation,
            tools=tools,
            max_tokens=self.max_tokens,
            thinking_budget=self._thinking,
        )
        if self.is_subagent:
            chars = 0
        elif chars is None:
            chars = cmp.messages_chars(request.messages)
        async for ev in self.provider.stream(request):
            if isinstance(ev, TextDelta | ThinkingDelta | Retrying | ToolUseStart | ToolUseArgs):
                # A copy per token costs: only a sub-agent's events are re-marked.
                emit(dataclasses.replace(ev, depth=self.depth) if self.depth else ev)
            elif isinstance(ev, UsageEvent):
                usage.add(ev.usage)
                emit(dataclasses.replace(ev, depth=self.depth))
                if not self.is_subagent:
                    await self.compactor.anchor_at(ev.usage, chars, emit)
            elif isinstance(ev, Stop):
                return ev
            elif isinstance(ev, ErrorEvent):
                if is_overflow(ev.message):
                    raise _Overflow(ev.message)
                raise _Halt("error", ev.message)
            elif isinstance(ev, ToolUseComplete):
                pass  # tools run once the response is complete; the UI shows ToolCallStarted
        raise _Halt("error", "the model stream ended without a response")

    async def _fit(
        self, emit: OnEvent, *, reason: str = "auto", force: bool = False, focus: str = ""
    ) -> bool:
        try:
            return await self.compactor.fit(
                self.provider, (self.model, self.max_tokens), emit, reason=reason, force=force, focus=focus
            )
        except ContextFull as e:
            raise _Halt("error", e.message) from None

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

    # -- around the turn: hooks and memory ----------------------------------------------------

    async def _prompt_hooks(self, text: str) -> list[str]:
        """What SessionStart and UserPromptSubmit hooks add at the head of the message; a
        UserPromptSubmit hook that exits 2 refuses the prompt (PromptRefused, its reason)."""
        heads, self.session_context = [self.session_context], ""
        if self.ext is not None and not self.is_subagent and self.ext.hooks.hooks:
            out = await self.ext.hook("UserPromptSubmit", session_id=self.session_id, prompt=text)
            if out.blocked:
                raise PromptRefused(f"the prompt was refused by a hook: {out.reason or 'no reason given'}")
            heads.append(out.context)
        return heads

    async def _stop_hook_goes_on(self) -> bool:
        """A Stop hook that exits 2 sends the model on with its reason (at most three times a turn),
        after the answer already in the conversation (once: its thinking must not go back twice)."""
        if self.ext is None or self.is_subagent or not self.ext.hooks.hooks:
            return False
        if self._stop_blocks >= MAX_STOP_BLOCKS:
            return False
        out = await self.ext.hook("Stop", session_id=self.session_id)
        if not out.blocked:
            return False
        self._stop_blocks += 1
        note = TextBlock(text=scrub_text(f"[Stop hook] {out.reason}"))
        await self.log.append(Message(role="user", content=[note]))
        return True

    async def _memory_heads(self, text: str) -> tuple[str, str]:
        """The ``<memory-update>`` and ``<memory-recall>`` blocks (a sub-agent gets neither)."""
        if self.is_subagent:
            return "", ""
        return await self.memory.heads(text)

    async def _commit(self, stop_reason: str | None) -> str | None:
        job_id = None
        if not self.is_subagent:
            turn = self.conversation[self.log.turn_start or 0 :]
            job_id = await self.memory.submit(turn, self.session_id, self.tool_ctx.workspace)
        await self._end_turn("completed", stop_reason=stop_reason, job=job_id)  # for a rewind to name
        return job_id

    async def _end_turn(self, status: str, **info: str | None) -> None:
        drop = await self.log.end(status, self.memory.receipt, dict(info))
        if drop and not self.is_subagent:
            # The dropped turn took its <memory-update> and <memory-recall> blocks with it: the
            # next Run says them again.
            self.memory.undo()

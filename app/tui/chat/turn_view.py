"""The running turn drawn in the chat pane: one handler per Runner event type.

The chat screen hands each Runner event (a ``TurnEvent`` message) to ``TurnRenderer.handle``, which looks
the event's class up in a table and runs its handler. The renderer owns what a turn's drawing
needs between events: the answer block being streamed, the call id → ``ToolBlock`` map, the calls
whose arguments still stream or that run, and the running ``task`` block of each sub-agent depth.

The map never keeps a block alive: it is weak (a block the chat pane prunes goes), and a call's
entry goes when the call finishes or the turn ends.

The event classes are imported on the first event, not with this module: the chat screen loads
it before the first frame, and the agent's modules are the runtime's (see ``app.tui.startup``).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from app.tui.chat.gc_hold import GcHold
from app.tui.chat.thinking_view import ThinkingView
from app.tui.status_model import StatusModel
from memory.text.lines import one_line
from memory.text.terminal import strip_terminal, strip_terminal_deep

if TYPE_CHECKING:
    from app.agent import tools
    from app.agent.conversation.todos import TodoList
    from app.agent.model.pricing import CostMeter
    from app.agent.model.provider import (
        Retrying,
        TextDelta,
        ThinkingDelta,
        ToolUseArgs,
        ToolUseStart,
        Usage,
        UsageEvent,
    )
    from app.agent.turn.events import (
        AnswerDone,
        Compacted,
        Compacting,
        ContextUsage,
        RunStop,
        TodosChanged,
        ToolCallApproved,
        ToolCallFinished,
        ToolCallStarted,
    )
    from widgets.chat.answer_block import AnswerBlock
    from widgets.chat.log import ChatPane
    from widgets.chat.tool_block import DisplayKeys, ResultView, ToolBlock

Handler = Callable[[Any], Awaitable[None]]


class TurnRenderer:
    """Draws a turn's events in the chat pane and keeps the status line's turn fields."""

    def __init__(
        self,
        chat: Callable[[], ChatPane],
        status: StatusModel,
        gc: GcHold,
        cost: Callable[[], CostMeter | None],
        model: Callable[[], str],
    ) -> None:
        self._chat = chat
        self._status = status
        self._gc = gc
        self._cost = cost
        self._model = model
        self.answer: AnswerBlock | None = None
        # call id -> its block; weak: a block the chat pane pruned is not kept alive here.
        self.tools: weakref.WeakValueDictionary[str, ToolBlock] = weakref.WeakValueDictionary()
        self._tool_bytes: dict[str, int] = {}
        self._unsettled: set[str] = set()  # tool blocks still streaming their arguments
        self._running: set[str] = set()  # tool calls started and not finished
        self._task_blocks: dict[int, ToolBlock] = {}  # depth -> the running task block
        self._usage: Usage | None = None  # the turn's tokens, all requests
        self._handlers: dict[type, Handler] | None = None
        self._showing: set[asyncio.Task[None]] = set()  # answers' ends being drawn (AnswerDone)
        self.thinking = ThinkingView(chat)  # the response's thinking blocks, and Ctrl+O
        # Where a todo_write's new list goes (the chat's to-do block); None: not shown.
        self.on_todos: Callable[[TodoList], None] | None = None

    # -- the table ---------------------------------------------------------------------------------

    def _table(self) -> dict[type, Handler]:
        if self._handlers is None:
            # At the first turn: the runner's events bring the tools and pydantic, which this module
            # (loaded before the app's first frame) must not.
            from app.agent.model import provider
            from app.agent.turn import events as runner

            self._handlers = {
                provider.TextDelta: self._text,
                provider.ThinkingDelta: self._thinking,
                provider.ToolUseStart: self._tool_start,
                provider.ToolUseArgs: self._tool_args,
                runner.ToolCallStarted: self._call_started,
                runner.ToolCallApproved: self._call_approved,
                runner.ToolCallFinished: self._call_finished,
                runner.TodosChanged: self._todos,
                provider.Retrying: self._retrying,
                provider.UsageEvent: self._usage_event,
                runner.ContextUsage: self._context,
                runner.Compacting: self._compacting,
                runner.Compacted: self._compacted,
                runner.RunStop: self._run_stop,
                runner.AnswerDone: self._answer_done,
            }
        return self._handlers

    async def handle(self, event: object) -> None:
        """Draw one Runner event; an event type with nothing to show is ignored."""
        handler = self._table().get(type(event))
        if self.thinking.block is not None and handler != self._thinking:
            self.thinking.close()  # the thinking ended where anything else of the turn began
        if handler is not None:
            await handler(event)

    # -- the turn's start and end ------------------------------------------------------------------

    def start(self) -> None:
        """A new turn: no answer yet, no tokens counted."""
        self.answer = None
        self._usage = None

    async def finish_answer(self) -> None:
        answer, self.answer = self.answer, None
        if answer is not None:
            await answer.finish()

    async def end(self) -> None:
        """The turn's worker is done: calls that never ran or never finished say so."""
        self.thinking.close()
        await self.finish_answer()
        for call_id in self._unsettled:
            if (block := self.tools.get(call_id)) is not None:
                block.set_result("not run: the turn ended first", is_error=True, denied=False)
        for call_id in self._running:
            if (block := self.tools.get(call_id)) is not None:
                block.set_result("[interrupted]", is_error=True, denied=False)
        self._unsettled.clear()
        self._running.clear()
        self._task_blocks.clear()
        self._tool_bytes.clear()
        self.tools.clear()

    def reset(self) -> None:
        """Another session is shown: nothing of the old one's drawing is kept."""
        self.tools.clear()
        self.answer = None
        self.thinking.block = None

    def typing(self) -> None:
        """A key was pressed: the streaming answer makes room for the keyboard."""
        if self.answer is not None:
            self.answer.typing()

    # -- text and tool calls -----------------------------------------------------------------------

    async def _text(self, ev: TextDelta) -> None:
        if ev.depth:
            parent = self._task_blocks.get(ev.depth - 1)
            append = getattr(parent, "append_text", None)
            if append is not None:  # a sub-agent's words go into its task block, not the answer
                append(strip_terminal(ev.text))
            return
        if self.answer is None:
            self.answer = self._chat().start_answer()
            self._gc.hold()
        await self.answer.append(ev.text)  # stripped over the stream by the block
        self._gc.tick()

    async def _thinking(self, ev: ThinkingDelta) -> None:
        self.thinking.delta(ev)

    def _new_block(self, call_id: str, name: str, depth: int) -> ToolBlock:
        parent = self._task_blocks.get(depth - 1) if depth else None
        parent_id = parent.call_id if parent is not None else None
        block = self._chat().add_tool(
            call_id, one_line(name, 60), depth=depth, parent_id=parent_id, display_keys=display_keys(name)
        )
        self.tools[call_id] = block
        return block

    def _block(self, call_id: str, name: str, depth: int) -> ToolBlock:
        return self.tools.get(call_id) or self._new_block(call_id, name, depth)

    async def _tool_start(self, ev: ToolUseStart) -> None:
        if not ev.depth:
            await self.finish_answer()
        self._new_block(ev.id, ev.name, ev.depth)
        self._tool_bytes[ev.id] = 0
        self._unsettled.add(ev.id)

    async def _tool_args(self, ev: ToolUseArgs) -> None:
        block = self.tools.get(ev.id)
        if block is not None:
            nbytes = self._tool_bytes.get(ev.id, 0) + len(ev.partial_json.encode("utf-8", "replace"))
            self._tool_bytes[ev.id] = nbytes
            block.set_streaming(nbytes)

    async def _call_started(self, ev: ToolCallStarted) -> None:
        block = self._block(ev.id, ev.name, ev.depth)
        self._unsettled.discard(ev.id)
        self._tool_bytes.pop(ev.id, None)
        self._running.add(ev.id)
        cleaned = strip_terminal_deep(ev.input)
        args = cleaned if isinstance(cleaned, dict) else {}
        if ev.waiting:
            block.set_waiting(args)  # its permission window is about to open
        else:
            block.set_running(args)
        if ev.name == "task":
            self._task_blocks[ev.depth] = block

    async def _call_approved(self, ev: ToolCallApproved) -> None:
        block = self.tools.get(ev.id)
        if block is not None:
            block.set_running()

    async def _call_finished(self, ev: ToolCallFinished) -> None:
        block = self._block(ev.id, ev.name, ev.depth)
        self._running.discard(ev.id)
        block.set_result(
            strip_terminal(ev.result.content),
            is_error=ev.result.is_error,
            denied=ev.denied,
            view=widget_view(ev.view),
            hook_s=ev.result.hook_s,
            hook_failed=ev.result.hook_failed,
        )
        self.tools.pop(ev.id, None)  # finished: nothing changes it any more
        if ev.name == "task":
            self._task_blocks.pop(ev.depth, None)

    async def _todos(self, ev: TodosChanged) -> None:
        if self.on_todos is not None and not ev.depth:
            self.on_todos(ev.todos)

    async def _retrying(self, ev: Retrying) -> None:
        if not ev.depth:
            had_text = self.answer is not None
            await self.finish_answer()
            void = "; the partial answer above is void" if had_text else ""
            self._chat().add_note(f"retrying in {ev.delay:g}s: {one_line(ev.reason, 200)}{void}")
        # The retried response's half-streamed calls (of that agent only) will never run.
        for call_id in list(self._unsettled):
            block = self.tools.get(call_id)
            if block is not None and block.depth == ev.depth:
                block.set_result("void: the response was retried", is_error=True, denied=False)
                self._unsettled.discard(call_id)

    # -- usage, compaction, the end ----------------------------------------------------------------

    async def _usage_event(self, ev: UsageEvent) -> None:
        if not ev.depth and self.answer is not None:
            # The response is complete: its last words are written now, not when the turn's
            # bookkeeping (the session file, the memory job) is done — and not waited for
            # here, where keys queue behind this handler.
            self.answer.flush()
        if self._usage is None:
            # Loaded by the first turn already; not with this module, before the app's first frame.
            from app.agent.model.provider import Usage

            self._usage = Usage()
        self._usage.add(ev.usage)
        cost = self._cost()
        if cost is not None:
            cost.add(ev.model or self._model(), ev.usage)  # a tool's side request: its own model
            self._status.update(cost=cost.describe())

    async def _context(self, ev: ContextUsage) -> None:
        self._status.update(context_pct=100 * ev.tokens // max(ev.window, 1))

    async def _compacting(self, ev: Compacting) -> None:
        await self.finish_answer()
        self._status.update(note="compacting the conversation…")

    async def _compacted(self, ev: Compacted) -> None:
        self._status.update(note="")
        chat = self._chat()
        if ev.error:
            chat.add_error(one_line(ev.describe(), 400))
        else:
            chat.add_note(one_line(ev.describe(), 400))

    async def _answer_done(self, ev: AnswerDone) -> None:
        # Not awaited here: the frame is drawn after this handler (the chat screen's queue) returns.
        task = asyncio.ensure_future(self._show_answer(self.answer, ev.shown))
        self._showing.add(task)
        task.add_done_callback(self._showing.discard)

    @staticmethod
    async def _show_answer(answer: AnswerBlock | None, shown: Callable[[], None]) -> None:
        """The answer's last words on screen, then ``shown`` (the Runner spools the turn's job)."""
        try:
            if answer is not None:
                answer.flush()  # the response is complete: a held escape sequence ends here
                await answer.drawn()
        finally:
            shown()

    async def _run_stop(self, ev: RunStop) -> None:
        await self.finish_answer()
        if self._usage is not None:
            # After a turn: pricing brings pydantic, which the app's first frame must not load.
            from app.agent.model.pricing import format_usage

            self._status.update(last_turn=format_usage(self._usage))
        if ev.status == "cancelled":
            self._chat().add_note("cancelled")
        elif ev.status != "completed":
            self._chat().add_error(one_line(ev.message or ev.status, 500))


def display_keys(tool_name: str) -> DisplayKeys:
    """The tool's telling inputs with their formats, as the tool gives them (none: unknown tool)."""
    # For a tool call: the tools bring pydantic and the stores, which the app's first frame must not load.
    from app.agent.tools import BUILTIN_TOOLS

    tool = BUILTIN_TOOLS.get(tool_name)
    return tool.display if tool is not None else ()


def widget_view(view: tools.ResultView | None) -> ResultView | None:
    """The tool's structured result as the tool block takes it."""
    if view is None:
        return None
    # For a tool's result: the tool block's module is not among the first frame's.
    from widgets.chat.tool_block import ResultView

    return ResultView(status=view.status, output=view.output, failed=view.failed)

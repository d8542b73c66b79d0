"""``todo_write {todos: [{content, status, active_form}]}``: the session's to-do list, replaced whole.

The person sees the list live (the app shows it above the prompt; print mode writes each change on
stderr) and it is kept in the session (``ToolContext.todos``: the session, which writes it to its
log). It changes nothing outside the session, so it never asks and runs in plan mode too; it is
not read-only all the same, as a sub-agent has no list of its own and does not get it.

Each item is checked (one line each): ``content`` and ``active_form`` one non-empty line of at
most ``MAX_TODO_CHARS`` characters, ``status`` one of the three; at most ``MAX_TODOS`` items, and
at most one ``in_progress`` (the person sees one active item).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, model_validator

from app.agent.conversation.session_log import SessionError
from app.agent.conversation.todos import ACTIVE, Todo, TodoList, TodoStore
from app.agent.tools.base import (
    ResultView,
    ToolContext,
    ToolError,
    ToolInput,
    ToolResult,
    parse_input,
    quote,
)
from app.agent.tools.fields import filled_text, refuse
from app.agent.tools.tool import Tool, ToolKind
from memory.text.terminal import is_unsafe_char

__all__ = ["MAX_TODOS", "MAX_TODO_CHARS", "TodoItemInput", "TodoWrite", "TodoWriteInput"]

MAX_TODOS = 100
MAX_TODO_CHARS = 500
_STATUSES = ("pending", "in_progress", "completed")


def _line(value: object, info: ValidationInfo) -> str:
    """One line of plain text, not empty, bounded (what the person reads in the list)."""
    text = filled_text(value, info).strip()
    name = info.field_name
    if not text:
        raise refuse(f"input {name!r} must say something, not only spaces")
    if any(is_unsafe_char(c) for c in text):
        raise refuse(f"input {name!r} must be one line of plain text (no line breaks or control characters)")
    if len(text) > MAX_TODO_CHARS:
        raise refuse(f"input {name!r} is {len(text):,} characters long; at most {MAX_TODO_CHARS}")
    return text


def _status(value: object, info: ValidationInfo) -> str:
    if value not in _STATUSES:
        shown = quote(value, 60) if isinstance(value, str) else type(value).__name__
        raise refuse(f"input 'status' must be pending, in_progress or completed, not {shown}")
    return str(value)


Line = Annotated[str, BeforeValidator(_line)]


class TodoItemInput(ToolInput):
    content: Line = Field(description='What is to be done, in the imperative: "Run the tests".')
    status: Annotated[Literal["pending", "in_progress", "completed"], BeforeValidator(_status)] = Field(
        description="pending, in_progress (exactly one item while you work on it) or completed."
    )
    active_form: Line = Field(description='The same while it is being done: "Running the tests".')


def _items(value: object) -> list[TodoItemInput]:
    """Each item checked, its error naming it: "todo 3: input 'status' must be …"."""
    if not isinstance(value, list):
        raise refuse("input 'todos' must be an array of to-do items")
    if len(value) > MAX_TODOS:
        raise refuse(f"input 'todos' has {len(value)} items; at most {MAX_TODOS}: group the small steps")
    items = []
    for n, raw in enumerate(value, 1):
        if not isinstance(raw, dict):
            raise refuse(f"todo {n} must be an object with content, status and active_form")
        try:
            items.append(parse_input(TodoItemInput, raw))
        except ToolError as e:
            raise refuse(f"todo {n}: {e}") from None
    return items


class TodoWriteInput(ToolInput):
    todos: Annotated[list[TodoItemInput], BeforeValidator(_items)] = Field(
        description="The whole list, in order; it replaces the one before (an empty list clears it)."
    )

    @model_validator(mode="after")
    def _one_active(self) -> TodoWriteInput:
        active = [t.content for t in self.todos if t.status == ACTIVE]
        if len(active) > 1:
            shown = ", ".join(quote(a, 60) for a in active[:3])
            raise refuse(
                f"at most one to-do may be in_progress, not {len(active)} ({shown}): mark the others "
                "pending or completed"
            )
        return self


class TodoWrite(Tool[TodoWriteInput]):
    name = "todo_write"
    Input = TodoWriteInput
    # It talks to the person and changes nothing outside the session: it never asks.
    kind = ToolKind.INTERACTION
    aliases = ("TodoWrite",)
    offloads = False  # its result is one line
    description = (
        "Keep a to-do list the user sees while you work: use it for work of three steps or more "
        "(skip it for a single small change or a question). Each call replaces the whole list. "
        'Give each item `content` (imperative: "Run the tests"), `status` and `active_form` '
        '(the same while it is done: "Running the tests"). Keep exactly one item in_progress while '
        "you work, mark each item completed as soon as it is done (not in batches at the end), and "
        "add the steps you discover; remove items that no longer apply."
    )

    async def run(self, args: TodoWriteInput, ctx: ToolContext) -> ToolResult:
        todos = TodoList(
            items=tuple(
                Todo(content=t.content, status=t.status, active_form=t.active_form) for t in args.todos
            )
        )
        keeper = ctx.todos if ctx.todos is not None else TodoStore()
        try:
            await asyncio.to_thread(keeper.record_todos, todos)
        except (OSError, SessionError) as e:
            raise ToolError(f"the to-do list was not saved: {e}") from None
        said = (
            "The to-do list was cleared." if todos.empty else f"The to-do list was saved: {todos.summary()}."
        )
        # The chat shows the list in a block of its own: the call's block says one line of it.
        view = ResultView(
            status=todos.progress() if todos.items else "cleared", output=todos.line(), failed=False
        )
        return ToolResult(content=said, todos=todos, view=view)

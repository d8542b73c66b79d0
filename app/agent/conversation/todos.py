"""The session's to-do list, as ``todo_write`` sets it: its items, and how the faces say it.

The list is session state: the model replaces it whole with each ``todo_write``, the session log
keeps each version (a ``todos`` record, app/agent/conversation/session_log.py), and a restored
session has it back. It is never given to memory extraction (a tool call's input is not).

An item's ``content`` says what is to be done ("Run the tests"); ``active_form`` says it while it
is being done ("Running the tests"), which is how the active item is shown.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

__all__ = [
    "ACTIVE",
    "DONE",
    "MARKS",
    "PENDING",
    "Todo",
    "TodoKeeper",
    "TodoList",
    "TodoStatus",
    "TodoStore",
]

TodoStatus = Literal["pending", "in_progress", "completed"]
PENDING: TodoStatus = "pending"
ACTIVE: TodoStatus = "in_progress"
DONE: TodoStatus = "completed"
# The marks carry the state (not colour: NO_COLOR shows the same list).
MARKS: dict[TodoStatus, str] = {DONE: "✓", ACTIVE: "▸", PENDING: "☐"}


class Todo(BaseModel):
    """One item: what is to be done, its state, and how it reads while it is being done."""

    model_config = ConfigDict(frozen=True)

    content: str
    status: TodoStatus
    active_form: str

    @property
    def shown(self) -> str:
        """How the item reads in the list: the active one by its ``active_form``."""
        return self.active_form if self.status == ACTIVE else self.content


class TodoList(BaseModel):
    """The whole list, in the model's order (empty: there is no list)."""

    model_config = ConfigDict(frozen=True)

    items: tuple[Todo, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.items

    @property
    def done(self) -> int:
        return sum(1 for t in self.items if t.status == DONE)

    @property
    def total(self) -> int:
        return len(self.items)

    @property
    def active(self) -> Todo | None:
        """The item being worked on (at most one is)."""
        return next((t for t in self.items if t.status == ACTIVE), None)

    @property
    def finished(self) -> bool:
        """Every item is done (a list whose work is over)."""
        return bool(self.items) and self.done == self.total

    def progress(self) -> str:
        """ "3/7 done"."""
        return f"{self.done}/{self.total} done"

    def summary(self) -> str:
        """The state in words for the model: "3/7 done; now: Running the tests"."""
        if self.empty:
            return "the list is empty"
        active = self.active
        now = f"; now: {active.active_form}" if active is not None else ""
        return f"{self.progress()}{now}"

    def line(self) -> str:
        """The state on one line for the person: "3/7 done · ▸ Running the tests" (the active
        item, else the next pending one); "cleared" for an empty list (the model emptied it)."""
        if self.empty:
            return "cleared"
        current = self.active or next((t for t in self.items if t.status == PENDING), None)
        if current is None:
            return self.progress()
        return f"{self.progress()} · {MARKS[current.status]} {current.shown}"

    def dump(self) -> list[JsonValue]:
        """The items as the session log keeps them."""
        return [t.model_dump(mode="json") for t in self.items]

    @classmethod
    def read(cls, raw: object) -> TodoList | None:
        """A list as the session log kept it; None when it is not one (a damaged record is
        ignored, as any field of the wrong type is)."""
        if not isinstance(raw, list):
            return None
        try:
            return cls(items=tuple(Todo.model_validate(item) for item in raw))
        except ValidationError:
            return None


class TodoKeeper(Protocol):
    """Where a session's list lives: the list now, and ``record_todos`` (blocking: it may write
    the session's file) replacing it. ``app.agent.conversation.session.Session`` is one;
    ``TodoStore`` keeps it in memory only."""

    @property
    def todos(self) -> TodoList: ...

    def record_todos(self, todos: TodoList) -> None: ...


class TodoStore:
    """A list kept in memory only (a conversation without a session file)."""

    def __init__(self, todos: TodoList | None = None) -> None:
        self.todos = todos if todos is not None else TodoList()

    def record_todos(self, todos: TodoList) -> None:
        self.todos = todos

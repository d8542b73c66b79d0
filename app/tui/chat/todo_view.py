"""The session's to-do list as the chat shows it: the live block between the chat and the prompt
(widgets/chat/todo_list.py), and ``/todos``'s whole list.

The block follows the list: a ``todo_write`` of the running turn (its ``TodosChanged`` event)
redraws it in place, a session switch shows that session's list, ``/clear`` (a new session)
empties it. It is hidden while there is no list, and once a turn ends with every item done (the
work is over; ``/todos`` still shows it until the next list replaces it).

The list is the agent's (``app.agent.conversation.todos.TodoList``), read by its fields only: its
module (pydantic) is no part of the app's first frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory.text.lines import one_line
from widgets.chat.todo_list import MARKS, TodoListView, TodoRow, progress

if TYPE_CHECKING:
    from app.agent.conversation.todos import TodoList

__all__ = ["TodoView", "todos_text"]

ITEM_CHARS = 300  # an item's text in /todos, at most (the block cuts to its width)


def rows_of(todos: TodoList | None) -> list[TodoRow]:
    if todos is None:
        return []
    return [TodoRow(text=t.shown, status=t.status) for t in todos.items]


def todos_text(todos: TodoList | None) -> str:
    """``/todos``: the whole list, a line an item, under its count."""
    rows = rows_of(todos)
    if not rows:
        return "no to-do list in this session (the model keeps one with todo_write for longer work)"
    lines = [f"To-do list: {progress(rows)}"]
    lines += [f"{MARKS[r.status]} {one_line(r.text, ITEM_CHARS)}" for r in rows]
    return "\n".join(lines)


class TodoView:
    """The list the chat shows (``todos``) and its block (``widget``)."""

    def __init__(self, widget: TodoListView) -> None:
        self.widget = widget
        self.todos: TodoList | None = None

    def changed(self, todos: TodoList) -> None:
        """A ``todo_write`` of the running turn: shown as it is, done items and all."""
        self.todos = todos
        self.widget.show(rows_of(todos))

    def session(self, todos: TodoList | None) -> None:
        """Another session is shown (``/clear``: none): its list, unless its work is over."""
        self.todos = todos
        self.turn_ended()

    def turn_ended(self) -> None:
        """A list whose items are all done leaves the screen once its turn is over."""
        todos = self.todos
        over = todos is None or todos.finished
        self.widget.show([] if over else rows_of(todos))

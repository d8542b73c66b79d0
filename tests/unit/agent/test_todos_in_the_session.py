"""The to-do list is session state: each change is a ``todos`` record in the session log, and a
restored session (``--continue``, ``--resume``, ``/resume``) has the list back, whether it is
replayed whole or from its last compaction boundary; a new session (``/clear``) has none; a
rewind of the conversation to before the turn that set a list brings back the list of then."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.agent.conversation.blocks import Message, TextBlock
from app.agent.conversation.session import Session
from app.agent.conversation.session_store import SessionStore
from app.agent.conversation.todos import Todo, TodoList
from app.agent.undo.rewind import conversation_before

pytestmark = pytest.mark.plain_ws


def todos(*items: tuple[str, str]) -> TodoList:
    return TodoList(items=tuple(Todo(content=c, status=s, active_form=f"{c}-ing") for c, s in items))


def turn(s: Session, n: int, todo_list: TodoList | None = None) -> None:
    s.begin_turn(f"turn {n}")
    s.append(Message(role="user", content=[TextBlock(text=f"turn {n}")]))
    if todo_list is not None:
        s.record_todos(todo_list)
    s.append(Message(role="assistant", content=[TextBlock(text=f"answer {n}")]))
    s.end_turn("completed")


FIRST = todos(("Read", "in_progress"), ("Fix", "pending"))
SECOND = todos(("Read", "completed"), ("Fix", "in_progress"))


def test_each_change_is_a_record_and_a_restored_session_has_the_last(isolated_home: Path, ws: Path) -> None:
    s = SessionStore().create(ws)
    turn(s, 1, FIRST)
    turn(s, 2, SECOND)
    assert s.todos == SECOND
    sid, path = s.id, s.path
    s.close()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    written = [r for r in records if r["type"] == "todos"]
    assert [TodoList.read(r["todos"]) for r in written] == [FIRST, SECOND]
    assert list(written[0]) == ["type", "todos"]  # the record's type first: readers find it by it
    for history in (True, False):
        restored = SessionStore(history=history).open(sid)
        assert restored.todos == SECOND
        restored.close()


def test_a_new_session_has_no_list_and_an_emptied_list_stays_empty(isolated_home: Path, ws: Path) -> None:
    s = SessionStore().create(ws)
    turn(s, 1, FIRST)
    turn(s, 2, TodoList())
    sid = s.id
    s.close()
    with SessionStore().open(sid) as restored:
        assert restored.todos.empty
    fresh = SessionStore().create(ws)  # what /clear opens
    assert fresh.todos.empty
    fresh.close()


def test_the_list_survives_a_compaction_even_read_from_the_boundary_on(isolated_home: Path, ws: Path) -> None:
    s = SessionStore().create(ws)
    turn(s, 1, FIRST)
    turn(s, 2)
    kept = [Message(role="user", content=[TextBlock(text="kept")])]
    kept.append(Message(role="assistant", content=[TextBlock(text="kept answer")]))
    s.compact("summary", kept, None, summarised=4, requests=1)
    turn(s, 3)
    sid = s.id
    s.close()
    for history in (True, False):  # print mode's --continue reads from the boundary on
        restored = SessionStore(history=history).open(sid)
        assert restored.todos == FIRST, history
        restored.close()


def test_a_damaged_record_is_skipped_and_the_list_before_it_kept(isolated_home: Path, ws: Path) -> None:
    s = SessionStore().create(ws)
    turn(s, 1, FIRST)
    sid, path = s.id, s.path
    s.close()
    with path.open("a") as f:
        f.write('{"type":"todos","todos":[{"content":"x","status":"maybe"}]}\n')
        f.write('{"type":"todos","todos":"not a list"}\n')
    restored = SessionStore().open(sid)
    assert restored.todos == FIRST
    restored.close()


def test_a_rewind_of_the_conversation_restores_the_list_of_before_that_turn(
    isolated_home: Path, ws: Path
) -> None:
    s = SessionStore().create(ws)
    turn(s, 1, FIRST)
    turn(s, 2, SECOND)
    turn(s, 3)
    s.record_rewind("[rewind to before turn 2]", 2, conversation_before(s.path, 2))
    assert s.todos == FIRST
    s.record_rewind("[rewind to before turn 1]", 1, conversation_before(s.path, 1))
    assert s.todos.empty
    turn(s, 6, SECOND)
    s.record_rewind("[files only]", 6, None)  # the conversation stays: so does the list
    assert s.todos == SECOND
    sid = s.id
    s.close()
    restored = SessionStore().open(sid)
    assert restored.todos == SECOND
    restored.close()
    # Rewinding the rewinds: before turn 5 (the second rewind) the list was the first one again.
    again = SessionStore().open(sid)
    again.record_rewind("[rewind to before turn 5]", 5, conversation_before(again.path, 5))
    assert again.todos == FIRST
    again.close()
    with SessionStore().open(sid) as last:
        assert last.todos == FIRST

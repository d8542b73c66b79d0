"""The model's to-do list in the app: a scripted ``todo_write`` shows the list between the chat and
the prompt (✓ done, ▸ the active item by its active form, ☐ pending), a second one redraws the same
block, a short screen shows one line, ``/todos`` shows the whole list, ``--continue`` and
``/resume`` have it back, ``/clear`` empties it, and a list whose work is over leaves once its turn ends."""

from __future__ import annotations

from typing import Any

from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.chat.todo_list import TodoListView


def item(content: str, status: str, active_form: str) -> dict[str, str]:
    return {"content": content, "status": status, "active_form": active_form}


FIRST = [
    item("Read the parser", "completed", "Reading the parser"),
    item("Run the tests", "in_progress", "Running the tests"),
    item("Fix the failing test", "pending", "Fixing the failing test"),
]
SECOND = [
    item("Read the parser", "completed", "Reading the parser"),
    item("Run the tests", "completed", "Running the tests"),
    item("Fix the failing test", "in_progress", "Fixing the failing test"),
]
ALL_DONE = [item(t["content"], "completed", t["active_form"]) for t in SECOND]


def write(todos: list[dict[str, str]], call_id: str) -> Any:
    return tool_use("todo_write", {"todos": todos}, id=call_id)


def block(app: Any) -> TodoListView:
    return app.chat_screen.query_one(TodoListView)


def shown(app: Any) -> list[str]:
    view = block(app)
    return [line.plain for line in view.lines()] if view.display else []


async def test_the_list_shows_between_the_chat_and_the_prompt_and_updates_in_place(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, write(FIRST, "toolu_1"), text("on it"), write(SECOND, "toolu_2"), text("nearly"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        view = block(app)
        assert not view.display  # no list: no block (the snapshots stay as they were)
        await send(pilot, "fix the parser")
        await wait_until(pilot, lambda: "on it" in chat_texts(app))
        await wait_until(pilot, lambda: len(shown(app)) == 4, what="the list")
        assert shown(app) == [
            "To-do 1/3 done",
            "✓ Read the parser",
            "▸ Running the tests",
            "☐ Fix the failing test",
        ]
        styles = [str(line.spans) for line in view.lines()]
        assert "dim" in styles[1] and "bold" in styles[2]
        chat, prompt = app.chat.region, app.prompt.region
        assert chat.bottom <= view.region.y and view.region.bottom <= prompt.y  # between them
        assert view.region.height == 4
        await send(pilot, "go on")
        await wait_until(pilot, lambda: "nearly" in chat_texts(app))
        await wait_until(pilot, lambda: "▸ Fixing the failing test" in shown(app), what="the new list")
        assert block(app) is view and len(app.chat_screen.query(TodoListView)) == 1  # the same block
        assert shown(app)[:3] == ["To-do 2/3 done", "✓ Read the parser", "✓ Run the tests"]
        # Each todo_write is its one tool call in the chat, which says one line of the list.
        calls = [b for b in app.chat.blocks if getattr(b, "tool_name", "") == "todo_write"]
        assert [c.excerpt for c in calls] == [
            "1/3 done · ▸ Running the tests",
            "2/3 done · ▸ Fixing the failing test",
        ]


async def test_a_short_screen_shows_one_line_and_todos_shows_the_whole_list(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, write(FIRST, "toolu_1"), text("on it"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(100, 24)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "fix the parser")
        await wait_until(pilot, lambda: "on it" in chat_texts(app))
        await wait_until(pilot, lambda: shown(app) != [], what="the list")
        assert shown(app) == ["1/3 done · ▸ Running the tests"]
        assert block(app).region.height == 1
        await send(pilot, "/todos")
        await wait_until(pilot, lambda: any(t.startswith("To-do list:") for t in chat_texts(app)))
        [whole] = [t for t in chat_texts(app) if t.startswith("To-do list:")]
        assert whole.splitlines() == [
            "To-do list: 1/3 done",
            "✓ Read the parser",
            "▸ Running the tests",
            "☐ Fix the failing test",
        ]
        await pilot.resize_terminal(120, 40)
        await wait_until(pilot, lambda: len(shown(app)) == 4, what="the whole block on a tall screen")


async def test_the_list_is_back_after_continue_and_resume_and_clear_empties_it(
    make_app, server: FakeAnthropic, ws: Any
) -> None:
    server.script(MODEL, write(FIRST, "toolu_1"), text("on it"))
    first = make_app(server, memory_mode="off")
    async with first.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "fix the parser")
        await wait_until(pilot, lambda: "on it" in chat_texts(first))
        await wait_until(pilot, lambda: shown(first) != [], what="the list")
    await first.bridge.close(0.0)
    again = make_app(server, memory_mode="off", continue_latest=True)
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "▸ Running the tests" in shown(again), what="the list, restored")
        sid = again.state.services.session.id
        await send(pilot, "/clear")
        await wait_until(pilot, lambda: not block(again).display, what="/clear to empty the list")
        await send(pilot, "/todos")
        await wait_until(pilot, lambda: any("no to-do list" in t for t in chat_texts(again)))
        await send(pilot, f"/resume {sid}")
        await wait_until(pilot, lambda: "▸ Running the tests" in shown(again), what="the list after /resume")


async def test_a_list_whose_work_is_over_leaves_when_the_turn_ends(make_app, server: FakeAnthropic) -> None:
    gate = server.gate()
    server.script(
        MODEL, write(FIRST, "toolu_1"), write(ALL_DONE, "toolu_2"), text("all done", hold_before=gate)
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "fix the parser")
        # While the turn runs, the finished list is still shown, every item ticked.
        await wait_until(pilot, lambda: shown(app)[:1] == ["To-do 3/3 done"], what="the finished list")
        assert shown(app)[1:] == ["✓ Read the parser", "✓ Run the tests", "✓ Fix the failing test"]
        gate.release()
        await wait_until(pilot, lambda: "all done" in chat_texts(app))
        await wait_until(pilot, lambda: not block(app).display, what="the finished list to leave")
        await send(pilot, "/todos")
        await wait_until(pilot, lambda: any(t.startswith("To-do list: 3/3 done") for t in chat_texts(app)))

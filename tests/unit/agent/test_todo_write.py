"""``todo_write``: the list replaced whole, each wrong input refused in one line, the result telling
the model the list's state, a tool that never asks and that a sub-agent does not get; memory
extraction never sees the list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.agent.conversation.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
from app.agent.conversation.todos import Todo, TodoList, TodoStore
from app.agent.memory_bridge.turn_memory import turn_for_memory
from app.agent.permissions.gate import Gate
from app.agent.permissions.modes import PermissionMode
from app.agent.permissions.rules import PermissionRules
from app.agent.tools import BUILTIN_TOOLS, ToolContext, ToolKind, run_tool
from app.agent.tools.builtin.todo_write import MAX_TODO_CHARS, MAX_TODOS
from app.agent.turn.system_prompt import build_system

pytestmark = pytest.mark.plain_ws


def item(content: str, status: str = "pending", active_form: str | None = None) -> dict[str, Any]:
    return {"content": content, "status": status, "active_form": active_form or f"Doing {content}"}


@pytest.fixture
def store() -> TodoStore:
    return TodoStore()


@pytest.fixture
def ctx(ws: Path, store: TodoStore) -> ToolContext:
    return ToolContext(workspace=ws, todos=store)


async def refusal(ctx: ToolContext, todos: object) -> str:
    result = await run_tool("todo_write", {"todos": todos}, ctx)
    assert result.is_error and result.todos is None
    assert "\n" not in result.content
    return result.content


async def test_the_list_is_replaced_whole_and_the_result_says_its_state(
    ctx: ToolContext, store: TodoStore
) -> None:
    first = [item("Read the code", "completed"), item("Run the tests", "in_progress", "Running the tests")]
    result = await run_tool("todo_write", {"todos": [*first, item("Fix the bug")]}, ctx)
    assert not result.is_error
    assert result.content == "The to-do list was saved: 1/3 done; now: Running the tests."
    assert store.todos.total == 3 and result.todos == store.todos
    assert [t.status for t in store.todos.items] == ["completed", "in_progress", "pending"]
    assert result.view is not None and result.view.status == "1/3 done"
    second = await run_tool("todo_write", {"todos": [item("Write the docs", "in_progress", "Writing")]}, ctx)
    assert second.content == "The to-do list was saved: 0/1 done; now: Writing."
    assert [t.content for t in store.todos.items] == ["Write the docs"]  # replaced, not merged
    cleared = await run_tool("todo_write", {"todos": []}, ctx)
    assert cleared.content == "The to-do list was cleared." and store.todos.empty
    assert cleared.todos is not None and cleared.todos.line() == "cleared"  # print mode: [todos cleared]


async def test_two_in_progress_items_are_refused_in_one_line(ctx: ToolContext, store: TodoStore) -> None:
    reason = await refusal(ctx, [item("a", "in_progress"), item("b", "in_progress"), item("c")])
    assert reason.startswith("at most one to-do may be in_progress, not 2")
    assert "'a'" in reason and "'b'" in reason
    assert store.todos.empty  # nothing saved


@pytest.mark.parametrize(
    ("todos", "needle"),
    [
        ([item("")], "todo 1: input 'content' must not be empty"),
        ([item("ok"), item("   ")], "todo 2: input 'content' must say something"),
        (
            [item("ok", "done")],
            "todo 1: input 'status' must be pending, in_progress or completed, not 'done'",
        ),
        ([item("ok", 3)], "todo 1: input 'status' must be pending, in_progress or completed, not int"),
        ([item("two\nlines")], "todo 1: input 'content' must be one line of plain text"),
        ([item("ok", active_form="\x1b[31mred")], "todo 1: input 'active_form' must be one line"),
        ([item("x" * (MAX_TODO_CHARS + 1))], f"at most {MAX_TODO_CHARS}"),
        ([{"content": "ok", "status": "pending"}], "todo 1: missing required input 'active_form'"),
        (["just text"], "todo 1 must be an object"),
        ("a list", "input 'todos' must be an array"),
        ([item(f"step {n}") for n in range(MAX_TODOS + 1)], f"at most {MAX_TODOS}"),
    ],
)
async def test_a_wrong_item_is_refused_naming_it(ctx: ToolContext, todos: object, needle: str) -> None:
    assert needle in await refusal(ctx, todos)


async def test_the_items_are_kept_trimmed(ctx: ToolContext, store: TodoStore) -> None:
    await run_tool("todo_write", {"todos": [item("  Run the tests ", "pending", " Running ")]}, ctx)
    assert store.todos.items == (Todo(content="Run the tests", status="pending", active_form="Running"),)


async def test_without_a_session_the_call_still_gives_the_list(ws: Path) -> None:
    result = await run_tool("todo_write", {"todos": [item("a")]}, ToolContext(workspace=ws))
    assert not result.is_error and result.todos is not None and result.todos.line() == "0/1 done · ☐ a"


def test_the_schema_states_each_items_fields() -> None:
    tool = BUILTIN_TOOLS.get("todo_write")
    assert tool is not None
    schema = tool.api()["input_schema"]
    assert schema["required"] == ["todos"]
    items = schema["properties"]["todos"]["items"]
    assert items["required"] == ["content", "status", "active_form"]
    assert items["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert items["additionalProperties"] is False
    assert "$ref" not in str(schema)


def test_it_never_asks_and_a_subagent_does_not_get_it() -> None:
    tool = BUILTIN_TOOLS.get("todo_write")
    assert tool is not None and tool.kind == ToolKind.INTERACTION
    assert not tool.asks and not tool.read_only
    assert "todo_write" not in BUILTIN_TOOLS.read_only().names()
    assert BUILTIN_TOOLS.names()[-1] == "todo_write"  # added at the end: the earlier bytes stay


def test_the_model_is_told_to_use_it_for_longer_work(ws: Path) -> None:
    tool = BUILTIN_TOOLS.get("todo_write")
    assert tool is not None and "three steps or more" in tool.description
    assert "exactly one item in_progress" in tool.description
    system = build_system(ws, "")[0].text
    assert "todo_write" in system and "three steps or more" in system


def test_the_lines_the_person_reads() -> None:
    todos = TodoList(
        items=(
            Todo(content="Read", status="completed", active_form="Reading"),
            Todo(content="Run the tests", status="in_progress", active_form="Running the tests"),
            Todo(content="Fix", status="pending", active_form="Fixing"),
        )
    )
    assert todos.line() == "1/3 done · ▸ Running the tests"
    assert todos.summary() == "1/3 done; now: Running the tests"
    waiting = TodoList(items=(todos.items[0], todos.items[2]))
    assert waiting.line() == "1/2 done · ☐ Fix"  # no active item: the next pending one
    done = TodoList(items=(todos.items[0],))
    assert done.line() == "1/1 done" and done.finished
    assert TodoList.read(todos.dump()) == todos
    assert TodoList.read([{"content": "x"}]) is None and TodoList.read("x") is None


def test_memory_extraction_never_sees_the_list() -> None:
    call = ToolUseBlock(
        id="toolu_t",
        name="todo_write",
        input={"todos": [item("Rotate the SECRETPLAN keys", "in_progress", "Rotating SECRETPLAN")]},
    )
    result = ToolResultBlock(tool_use_id="toolu_t", content="The to-do list was saved: 0/1 done; now: x.")
    turn = turn_for_memory(
        [
            Message(role="user", content=[TextBlock(text="please do the work")]),
            Message(role="assistant", content=[call]),
            Message(role="user", content=[result]),
            Message(role="assistant", content=[TextBlock(text="done")]),
        ]
    )
    said = " ".join(m.text for m in turn.messages)
    assert "SECRETPLAN" not in said and "to-do" not in said
    assert turn.paths == []


async def test_it_runs_in_plan_mode_without_asking(ctx: ToolContext, ws: Path) -> None:
    async def never_asked(question: object) -> object:
        raise AssertionError("todo_write asked the person")

    gate = Gate(PermissionRules(workspace=ws), ask=never_asked, permission_mode=PermissionMode.PLAN)
    tool = BUILTIN_TOOLS.get("todo_write")
    assert tool is not None
    args = tool.parse({"todos": [item("Plan the change", "in_progress")]})
    assert (await gate.decide(tool, args, ctx=ctx)).allowed
    edit = BUILTIN_TOOLS.get("write_file")
    assert edit is not None  # while a write is refused there
    assert not (await gate.decide(edit, edit.parse({"path": "a", "content": "b"}), ctx=ctx)).allowed

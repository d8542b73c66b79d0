"""turn_for_memory: the workspace paths a turn's file tools named, and nothing else of a call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.agent.conversation.blocks import (
    Block,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
)
from app.agent.memory_bridge.turn_memory import MAX_PATH_CHARS, MAX_TURN_PATHS, turn_for_memory

WS = "/work/space"


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{name}", "name": name, "input": args}


def _block(raw: dict[str, Any]) -> Block:
    """The block as the model sent it (a call whose input is not an object stays a block the
    product does not read)."""
    try:
        return ToolUseBlock.model_validate(raw)
    except ValidationError:
        return UnknownBlock.model_validate(raw)


def _paths(*blocks: dict[str, Any], workspace: str | Path | None = WS) -> list[str]:
    messages = [
        Message(role="user", content=[TextBlock(text="look around")]),
        Message(role="assistant", content=[TextBlock(text="Looking."), *(_block(b) for b in blocks)]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_x", content="src/leak.py")]),
        Message(role="assistant", content=[TextBlock(text="Done.")]),
    ]
    return turn_for_memory(messages, "s", workspace=workspace).paths


def test_the_file_tools_paths_in_order_of_first_use_normalised_and_deduplicated() -> None:
    got = _paths(
        _call("read_file", path="./src/app.py", offset=3),
        _call("grep", pattern="SECRET", path="src/", glob="*.py"),
        _call("edit_file", path="Makefile", old_string="a", new_string="b"),
        _call("write_file", path=f"{WS}/docs/new.md", content="text"),
        _call("list_files", path="tests", pattern="**/*.py"),
        _call("read_file", path="src/app.py"),
        _call("read_file", path="src/../src/app.py"),
    )
    assert got == ["src/app.py", "src", "Makefile", "docs/new.md", "tests"]


def test_nothing_but_the_path_of_a_call_is_kept() -> None:
    got = _paths(
        _call("grep", pattern="src/pattern.py"),
        _call("list_files", pattern="src/glob/**"),
        _call("bash", command="cat src/bash.py", path="src/bash.py"),
        _call("task", description="d", prompt="read src/task.py", path="src/task.py"),
        _call("read_memory", filename="project_knowledge_a.md", path="src/memory.py"),
    )
    assert got == []


def test_the_workspace_root_is_not_a_path() -> None:
    assert (
        _paths(
            _call("list_files"),
            _call("list_files", path="."),
            _call("grep", pattern="x"),
            _call("list_files", path=WS),
            _call("grep", pattern="x", path="./"),
        )
        == []
    )


def test_hostile_paths_are_left_out() -> None:
    got = _paths(
        _call("read_file", path="/etc/passwd"),
        _call("read_file", path=f"{WS}-other/x.py"),
        _call("read_file", path="../outside.py"),
        _call("read_file", path="src/../../outside.py"),
        _call("read_file", path="src/a\x00.py"),
        _call("read_file", path="src/a\x1b[31m.py"),
        _call("read_file", path="src/\u202eyp.a"),
        _call("read_file", path="src/\udcff.py"),
        _call("read_file", path="a" * (MAX_PATH_CHARS + 1)),
        _call("read_file", path=["src/list.py"]),
        _call("read_file", path=7),
        _call("read_file", path=None),
        _call("read_file", path=""),
        {"type": "tool_use", "id": "toolu_bad", "name": "read_file", "input": "src/str.py"},
        {"type": "tool_use", "id": "toolu_none", "name": "read_file"},
        _call("read_file", path="kept.py"),
    )
    assert got == ["kept.py"]


def test_an_absolute_path_without_a_workspace_is_left_out() -> None:
    assert _paths(_call("read_file", path=f"{WS}/a.py"), _call("read_file", path="b.py"), workspace=None) == [
        "b.py"
    ]


def test_an_absolute_path_through_the_workspaces_real_path_is_relative(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert _paths(_call("read_file", path=f"{real}/a.py"), workspace=link) == ["a.py"]


def test_at_most_max_turn_paths_and_a_long_path_at_the_limit_is_kept() -> None:
    long = "d/" + "a" * (MAX_PATH_CHARS - 2)
    got = _paths(_call("read_file", path=long), *[_call("read_file", path=f"f{k}.py") for k in range(500)])
    assert len(got) == MAX_TURN_PATHS and got[0] == long and got[-1] == f"f{MAX_TURN_PATHS - 2}.py"


def test_user_messages_tool_use_blocks_are_not_the_models_calls() -> None:
    messages = [Message(role="user", content=[_block(_call("read_file", path="src/user.py"))])]
    assert turn_for_memory(messages, workspace=WS).paths == []


def test_an_old_spooled_turn_without_paths_still_loads() -> None:
    from memory.model import Turn

    turn = Turn.model_validate({"messages": [{"role": "user", "text": "hi"}], "session": "s"})
    assert turn.paths == []

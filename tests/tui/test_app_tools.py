"""Tool calls in the app: the permission modal's three answers and its note, the block's states while
it asks, Esc mid-tool, nested sub-agent calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.chat.answer_block import AnswerBlock
from widgets.chat.tool_block import ToolBlock
from widgets.dialogs.permission import PermissionModal


def _write(path: str, content: str, call_id: str) -> object:
    return tool_use("write_file", {"path": path, "content": content}, id=call_id)


async def _answer_modal(pilot, key: str) -> PermissionModal:
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the permission modal")
    modal = app.screen
    await pilot.press(key)
    await wait_until(pilot, lambda: app.screen is not modal, what="the modal to close")
    return modal


async def test_allow_once_runs_the_call_and_the_next_call_asks_again(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(
        MODEL, _write("a.txt", "one", "toolu_a"), _write("b.txt", "two", "toolu_b"), text("both written")
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "write two files")
        modal = await _answer_modal(pilot, "1")
        assert "a.txt" in modal.request.summary and "one" in modal.request.preview
        await wait_until(pilot, lambda: (ws / "a.txt").exists())
        await _answer_modal(pilot, "y")  # asked again: "once" was for that call only
        await wait_until(pilot, lambda: "both written" in chat_texts(app))
        assert (ws / "b.txt").read_text() == "two"
        assert app.chat.tool("toolu_a").status == "done" and app.chat.tool("toolu_b").status == "done"


async def test_allow_for_the_session_does_not_ask_again_until_clear(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, _write("a.txt", "one", "toolu_a"), _write("b.txt", "two", "toolu_b"), text("done"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "write two files")
        await _answer_modal(pilot, "2")
        await wait_until(pilot, lambda: "done" in chat_texts(app))
        assert (ws / "a.txt").exists() and (ws / "b.txt").exists()
        assert app.bridge.gate.session_allowed == {"write_file"}
        await send(pilot, "/clear")
        await wait_until(pilot, lambda: not app.bridge.gate.session_allowed)


async def test_deny_gives_a_denied_result_and_the_turn_goes_on(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, tool_use("bash", {"command": "touch pwned"}, id="toolu_x"), text("ok, I will not"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "run something")
        modal = await _answer_modal(pilot, "escape")
        assert modal.request.preview == "touch pwned" and modal.request.preview_kind == "command"
        await wait_until(pilot, lambda: "ok, I will not" in chat_texts(app))
        assert app.chat.tool("toolu_x").status == "denied"
        assert not (ws / "pwned").exists()
        second = server.requests_for(MODEL)[1].body["messages"][-1]["content"][0]
        assert second["is_error"] and "denied" in second["content"]


async def test_an_edit_asks_with_a_unified_diff(make_app, server: FakeAnthropic, ws: Path) -> None:
    (ws / "cfg.txt").write_text("alpha\nbeta\n")
    server.script(
        MODEL,
        tool_use("edit_file", {"path": "cfg.txt", "old_string": "beta", "new_string": "gamma"}),
        text("edited"),
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "edit it")
        modal = await _answer_modal(pilot, "n")
        assert modal.request.preview_kind == "diff"
        assert "-beta" in modal.request.preview and "+gamma" in modal.request.preview
        await wait_until(pilot, lambda: "edited" in chat_texts(app))
        assert (ws / "cfg.txt").read_text() == "alpha\nbeta\n"


async def test_escape_cancels_a_running_tool_and_the_conversation_stays_valid(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, tool_use("bash", {"command": "sleep 30"}, id="toolu_s"), text("after"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "wait a while")
        await _answer_modal(pilot, "a")
        await wait_until(
            pilot,
            lambda: app.chat.tool("toolu_s") is not None and app.chat.tool("toolu_s").status == "running",
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: "cancelled" in chat_texts(app))
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None)
        assert app.chat.tool("toolu_s").status == "error"
        await send(pilot, "go on")
        await wait_until(pilot, lambda: "after" in chat_texts(app))


async def test_a_sub_agents_calls_nest_under_its_task_block(make_app, server: FakeAnthropic) -> None:
    server.script(
        MODEL,
        tool_use("task", {"description": "look", "prompt": "read the README"}, id="toolu_task"),
        tool_use("read_file", {"path": "README.md"}, id="toolu_read"),
        text("the README says make build"),
        text("The sub-agent found it."),
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "investigate")
        await wait_until(pilot, lambda: "The sub-agent found it." in chat_texts(app))
        task = app.chat.tool("toolu_task")
        assert isinstance(task, ToolBlock) and task.status == "done"
        assert task.find("toolu_read") is not None and task.find("toolu_read").status == "done"
        assert not any(getattr(b, "call_id", None) == "toolu_read" for b in app.chat.blocks)
        # The sub-agent's words are its task's result, not an answer of the main agent.
        assert "the README says make build" in (task.result_text or "")
        assert not any("the README says" in b.text for b in app.chat.blocks if isinstance(b, AnswerBlock))


async def test_the_block_waits_for_permission_while_the_window_is_open_then_runs(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    # The command runs until the test lets it go: "running…" is seen without any timing.
    command = "while [ ! -e go ]; do sleep 0.05; done; echo went"
    server.script(MODEL, tool_use("bash", {"command": command}, id="toolu_w"), text("it went"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "wait for go")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the permission modal")
        block = app.chat.tool("toolu_w")
        assert block.status == "waiting" and "waiting for permission" in block.header_text
        assert "running" not in block.header_text and "while [ ! -e go ]" in block.header_text
        await pilot.press("1")
        await wait_until(pilot, lambda: block.status == "running", what="the call to run")
        assert "running…" in block.header_text and "while [ ! -e go ]" in block.header_text
        (ws / "go").touch()
        await wait_until(pilot, lambda: "it went" in chat_texts(app))
        assert block.status == "done"


async def test_the_block_shows_denied_after_a_denial_from_the_waiting_state(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, _write("a.txt", "one", "toolu_d"), text("fine"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "write it")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the permission modal")
        assert app.chat.tool("toolu_d").status == "waiting"
        await pilot.press("3")
        await wait_until(pilot, lambda: "fine" in chat_texts(app))
        block = app.chat.tool("toolu_d")
        assert block.status == "denied" and "denied" in block.header_text


async def test_a_call_allowed_for_the_session_never_shows_waiting(make_app, server: FakeAnthropic) -> None:
    server.script(MODEL, _write("a.txt", "one", "toolu_a"), _write("b.txt", "two", "toolu_b"), text("done"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        shown: list[tuple[str, str]] = []
        original = ToolBlock._render_header

        def recording(self: ToolBlock) -> None:
            shown.append((self.call_id, self.status))
            original(self)

        ToolBlock._render_header = recording  # type: ignore[method-assign]
        try:
            await send(pilot, "write two files")
            await _answer_modal(pilot, "a")
            await wait_until(pilot, lambda: "done" in chat_texts(app))
        finally:
            ToolBlock._render_header = original  # type: ignore[method-assign]
        assert ("toolu_a", "waiting") in shown and ("toolu_a", "running") in shown
        assert ("toolu_b", "waiting") not in shown and ("toolu_b", "running") in shown


async def test_a_denial_note_typed_in_the_window_reaches_the_model(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, tool_use("bash", {"command": "rm -rf build"}, id="toolu_rm"), text("understood"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "clean up")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the permission modal")
        modal = app.screen
        await pilot.press("tab", *"use make clean", "enter")
        await wait_until(pilot, lambda: app.screen is not modal, what="the modal to close")
        await wait_until(pilot, lambda: "understood" in chat_texts(app))
        result = server.requests_for(MODEL)[1].body["messages"][-1]["content"][0]
        assert result["tool_use_id"] == "toolu_rm" and result["is_error"]
        assert result["content"] == "bash was denied by the user, who said: use make clean"
        block = app.chat.tool("toolu_rm")
        assert block.status == "denied" and "use make clean" in (block.result_text or "")


@pytest.mark.parametrize("content", ["one\ntwo\n", "one\ntwo", "one\r\ntwo\r\n"])
async def test_the_write_dialog_and_its_tool_block_say_the_same_line_count(
    make_app, server: FakeAnthropic, content: str
) -> None:
    server.script(MODEL, _write("n.txt", content, "toolu_n"), text("not written"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "write it")
        modal = await _answer_modal(pilot, "n")
        assert "(2 line(s)," in modal.request.summary
        assert app.chat.tool("toolu_n").args_line == "n.txt  content: 2 lines"


async def test_a_finished_tool_call_leaves_the_turns_map(make_app, server: FakeAnthropic, ws: Path) -> None:
    """The turn's call id → block map drops a call when it finishes: a long session does not
    keep every block it drew (the chat pane prunes old blocks; nothing else holds them)."""
    (ws / "notes.txt").write_text("hello\n", encoding="utf-8")
    server.script(MODEL, tool_use("read_file", {"path": "notes.txt"}, id="toolu_r"), text("read it"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "read the notes")
        await wait_until(pilot, lambda: "read it" in chat_texts(app))
        block = app.chat.tool("toolu_r")
        assert block is not None and block.status == "done"
        assert "toolu_r" not in app.chat_screen.turn_view.tools


async def test_a_pruned_tool_block_is_not_kept_alive_by_the_turns_map() -> None:
    """A block the chat pane dropped (pruned) while its call still streams is not held by the
    renderer: the map is weak."""
    import gc

    from app.agent.model.provider import ToolUseStart
    from app.tui.chat.gc_hold import GcHold
    from app.tui.chat.turn_view import TurnRenderer
    from app.tui.status_model import StatusModel

    class Block:
        depth = 0
        call_id = "toolu_p"

    class Pane:  # the chat pane's part the renderer uses; it keeps nothing (as after a prune)
        def add_tool(self, call_id: str, name: str, **kw: object) -> Block:
            return Block()

    pane = Pane()
    renderer = TurnRenderer(lambda: pane, StatusModel("/w"), GcHold(), lambda: None, lambda: "m")  # type: ignore[arg-type, return-value]
    await renderer.handle(ToolUseStart(id="toolu_p", name="read_file"))
    gc.collect()
    assert "toolu_p" not in renderer.tools  # the pane let go of it: so did the renderer


async def test_a_bash_block_shows_the_command_and_the_tools_own_status(
    make_app, server: FakeAnthropic
) -> None:
    """The block's header names the spec's telling input (the command) and the status the bash
    tool gives (its exit code), not one parsed back out of the result text."""
    server.script(MODEL, tool_use("bash", {"command": "echo hi"}, id="toolu_b"), text("ran it"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "run echo")
        await _answer_modal(pilot, "1")
        await wait_until(pilot, lambda: "ran it" in chat_texts(app))
        block = app.chat.tool("toolu_b")
        assert isinstance(block, ToolBlock) and block.status == "done"
        assert "echo hi" in block.header_text and "exit 0" in block.header_text

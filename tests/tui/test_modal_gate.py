"""The Runner with the app's side of the gate (ModalAsk), through the real SDK against the fake
Messages API: the events a call that asks goes through, and the person's note on a denial reaching
the model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.agent.runtime import Runtime
from app.agent.tools import BUILTIN_TOOLS, ToolContext
from app.agent.turn.events import ToolCallApproved, ToolCallFinished, ToolCallStarted
from app.tui.permission.modal_ask import ModalAsk
from tests.support.clitools import MODEL, result_text, tool_results
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from widgets.chat.tool_block import summarize_args
from widgets.dialogs.permission import PermissionAnswer, PermissionRequest

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def sdk_env(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("PSEUDOCLAUDE_RETRY_DELAY", "0.01")


class Person:
    """Answers the permission questions in order, and records what was asked."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.asked: list[PermissionRequest] = []

    async def __call__(self, request: PermissionRequest) -> Any:
        self.asked.append(request)
        return self.answers.pop(0)


@pytest.fixture
async def make_runtime(ws: Path) -> AsyncIterator[Any]:
    opened: list[Runtime] = []

    async def factory(person: Person) -> Runtime:
        rt = Runtime(load_settings({"memory_mode": "off"}), ws, ask=ModalAsk(person))
        await rt.open_session()
        opened.append(rt)
        return rt

    yield factory
    for rt in opened:
        await rt.close()


async def test_a_denial_note_reaches_the_model_in_the_tool_result(
    server: FakeAnthropic, make_runtime: Any
) -> None:
    server.script(MODEL, tool_use("bash", {"command": "rm -rf build"}, id="toolu_rm"), text("ok, I will not"))
    person = Person(PermissionAnswer("deny", "keep build/, run make clean instead"))
    rt = await make_runtime(person)
    stop = await rt.runner.run("clean up")
    assert stop.status == "completed"
    [result] = tool_results(server.requests_for(MODEL)[1])
    assert result["tool_use_id"] == "toolu_rm" and result.get("is_error")
    assert result_text(result) == "bash was denied by the user, who said: keep build/, run make clean instead"


async def test_a_hostile_denial_note_reaches_the_model_as_one_clean_bounded_line(
    server: FakeAnthropic, make_runtime: Any
) -> None:
    server.script(MODEL, tool_use("bash", {"command": "ls"}, id="toolu_ls"), text("noted"))
    # An ask that returns a raw note (not cleaned by the modal): the gate cleans it itself.
    raw = "first line\n\x1b]52;c;aGFja2Vk\x07second\x1b[31m line\x00\u202e\r\n" + "x" * 2000
    rt = await make_runtime(Person(PermissionAnswer("deny", raw)))
    await rt.runner.run("list")
    [result] = tool_results(server.requests_for(MODEL)[1])
    content = result_text(result)
    assert content.startswith("bash was denied by the user, who said: first line second line x")
    assert "\n" not in content and "\x1b" not in content and "\x00" not in content and "\u202e" not in content
    assert "aGFja2Vk" not in content and len(content) < 400


async def test_a_denial_without_a_note_says_only_that_it_was_denied(
    server: FakeAnthropic, make_runtime: Any
) -> None:
    server.script(MODEL, tool_use("bash", {"command": "ls"}, id="toolu_ls"), text("noted"))
    rt = await make_runtime(Person("deny"))  # a bare choice, as an ask may answer
    await rt.runner.run("list")
    [result] = tool_results(server.requests_for(MODEL)[1])
    assert result_text(result) == "bash was denied by the user"


async def test_a_call_that_asks_starts_waiting_then_is_approved_then_runs(
    server: FakeAnthropic, make_runtime: Any, ws: Path
) -> None:
    server.script(
        MODEL,
        tool_use("write_file", {"path": "a.txt", "content": "one"}, id="toolu_a"),
        tool_use("write_file", {"path": "b.txt", "content": "two"}, id="toolu_b"),
        tool_use("read_file", {"path": "a.txt"}, id="toolu_r"),
        tool_use("bash", {"command": "true"}, id="toolu_x"),
        text("done"),
    )
    rt = await make_runtime(Person(PermissionAnswer("session"), PermissionAnswer("deny")))
    events: list[Any] = []
    await rt.runner.run("write", events.append)
    seen = [
        (type(e).__name__, e.id, getattr(e, "waiting", None))
        for e in events
        if isinstance(e, ToolCallStarted | ToolCallApproved | ToolCallFinished)
    ]
    assert seen == [
        ("ToolCallStarted", "toolu_a", True),
        ("ToolCallApproved", "toolu_a", None),
        ("ToolCallFinished", "toolu_a", None),
        # Allowed for the session: the next write asks nothing and never waits.
        ("ToolCallStarted", "toolu_b", False),
        ("ToolCallFinished", "toolu_b", None),
        # A reading tool never asks.
        ("ToolCallStarted", "toolu_r", False),
        ("ToolCallFinished", "toolu_r", None),
        # Denied: no approval, a denied result.
        ("ToolCallStarted", "toolu_x", True),
        ("ToolCallFinished", "toolu_x", None),
    ]
    assert [e.denied for e in events if isinstance(e, ToolCallFinished)] == [False, False, False, True]
    assert (ws / "b.txt").read_text() == "two"


@pytest.mark.parametrize(
    ("content", "lines"),
    [
        ("one\ntwo\nthree", 3),
        ("one\ntwo\nthree\n", 3),
        ("one\r\ntwo\r\nthree\r\n", 3),
        ("one\r\ntwo\r\nthree", 3),
        ("\n", 1),
        ("one", 1),
    ],
)
def test_the_write_dialog_and_the_tool_block_count_the_same_lines(ws: Path, content: str, lines: int) -> None:
    write = BUILTIN_TOOLS.get("write_file")
    assert write is not None
    summary = write.preview(
        write.parse({"path": "new.txt", "content": content}), ToolContext(workspace=ws)
    ).summary
    plural = "line" if lines == 1 else "lines"
    assert f"({lines} line(s)," in summary
    keys = write.display
    assert (
        summarize_args({"path": "new.txt", "content": content}, keys) == f"new.txt  content: {lines} {plural}"
    )

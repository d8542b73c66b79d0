"""A write the tool would refuse anyway (into .git/, a memory store, outside the workspace,
through a symlink to any of them) is refused before the permission gate: no one is asked to
allow it, and the model gets the reason in one line. A normal write still asks."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.agent.permissions.question import Answer, Question
from app.agent.runtime import Runtime
from app.agent.turn.events import ToolCallStarted
from app.tui.permission.modal_ask import ModalAsk
from memory.store.paths import pseudoclaude_home
from tests.support.clitools import MODEL, result_text, tool_results
from tests.support.fakeapi import FakeAnthropic, message, text, tool_block

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]


class RecordingAsk:
    """A person who is asked (a writing tool asks) and records each question; it allows all."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, question: Question) -> Answer:
        self.asked.append((question.tool, question.input.model_dump(exclude_unset=True)))
        return Answer(choice="once")


@pytest.fixture
def layout(ws: Path) -> Iterator[Path]:
    """The workspace with a .git/config, a project card, a user card and symlinks into .git
    and into the project store."""
    (ws / ".git" / "config").write_text("[core]\n")
    store = ws / ".PseudoClaude" / "memory"
    store.mkdir(parents=True)
    (store / "project_knowledge_build.md").write_text("card\n")
    (ws / "gitlink").symlink_to(ws / ".git")
    (ws / "cards").symlink_to(store)
    yield ws


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("write_file", {"path": ".git/config", "content": "x"}, ".git"),
    ("edit_file", {"path": ".git/config", "old_string": "core", "new_string": "x"}, ".git"),
    (
        "write_file",
        {"path": ".PseudoClaude/memory/project_knowledge_build.md", "content": "x"},
        "memory store",
    ),
    ("write_file", {"path": ".PseudoClaude/memory/new/sub.md", "content": "x"}, "memory store"),
    ("write_file", {"path": "../outside.txt", "content": "x"}, "leaves the workspace"),
    ("write_file", {"path": "gitlink/config", "content": "x"}, ".git"),
    ("write_file", {"path": "cards/project_knowledge_build.md", "content": "x"}, "memory store"),
    (
        "edit_file",
        {"path": "cards/project_knowledge_build.md", "old_string": "card", "new_string": "x"},
        "memory store",
    ),
]


def _script(server: FakeAnthropic, calls: list[tuple[str, dict[str, Any]]]) -> None:
    blocks = [tool_block(name, inp, id=f"toolu_{i}") for i, (name, inp) in enumerate(calls)]
    server.script(MODEL, message(*blocks, stop_reason="tool_use"), text("done"))


async def _run(ws: Path, **permissions: Any) -> list[object]:
    rt = Runtime(load_settings({"memory_mode": "off"}), ws, **permissions)
    await rt.open_session()
    events: list[object] = []
    try:
        stop = await rt.runner.run("change things", events.append)
    finally:
        await rt.close()
    assert stop.status == "completed"
    return events


async def test_refused_writes_never_ask_and_say_why_a_normal_write_still_asks(
    server: FakeAnthropic, layout: Path
) -> None:
    ws = layout
    calls = [(name, inp) for name, inp, _ in REFUSED] + [
        ("write_file", {"path": "src/ok.txt", "content": "fine"})
    ]
    _script(server, calls)
    gate = RecordingAsk()
    events = await _run(ws, ask=gate)
    # Only the normal write was put to the person.
    assert gate.asked == [("write_file", {"path": "src/ok.txt", "content": "fine"})]
    assert (ws / "src" / "ok.txt").read_text() == "fine"
    # A refused call never shows as waiting for permission.
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [e.waiting for e in started] == [False] * len(REFUSED) + [True]
    results = tool_results(server.requests_for(MODEL)[-1])
    assert len(results) == len(calls)
    for (_, _, needle), res in zip(REFUSED, results, strict=False):
        body = result_text(res)
        assert res.get("is_error") and needle in body and "\n" not in body, body
    assert not results[-1].get("is_error")
    # Nothing the refused calls named was touched.
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert (ws / ".PseudoClaude" / "memory" / "project_knowledge_build.md").read_text() == "card\n"
    assert not (ws.parent / "outside.txt").exists()
    assert not (ws / ".PseudoClaude" / "memory" / "new").exists()


async def test_a_user_store_inside_the_workspace_is_refused_without_asking(
    server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = ws / "pchome"
    monkeypatch.setenv("PSEUDOCLAUDE_HOME", str(home))
    (pseudoclaude_home() / "memory").mkdir(parents=True)
    _script(server, [("write_file", {"path": "pchome/memory/user_preference_x.md", "content": "x"})])
    gate = RecordingAsk()
    await _run(ws, ask=gate)
    assert gate.asked == []
    (res,) = tool_results(server.requests_for(MODEL)[-1])
    assert res.get("is_error") and "user memory store" in result_text(res)
    assert os.listdir(home / "memory") == []


async def test_the_apps_modal_gate_opens_no_window_for_a_refused_write(
    server: FakeAnthropic, layout: Path
) -> None:
    asked: list[object] = []

    async def ask(request: object) -> str:
        asked.append(request)
        return "once"

    _script(
        server,
        [
            ("write_file", {"path": "gitlink/config", "content": "x"}),
            ("write_file", {"path": "src/ok.txt", "content": "fine"}),
        ],
    )
    await _run(layout, ask=ModalAsk(ask))
    assert [getattr(r, "name", None) for r in asked] == ["write_file"]
    assert "src/ok.txt" in getattr(asked[0], "summary", "")


async def test_print_mode_names_the_real_reason_not_the_allow_list(
    server: FakeAnthropic, layout: Path
) -> None:
    # write_file is not in --allow-tools: the reason is still where the write would go.
    _script(server, [("write_file", {"path": ".git/config", "content": "x"})])
    await _run(layout)  # nobody to ask, nothing allowed beyond the rules
    (res,) = tool_results(server.requests_for(MODEL)[-1])
    assert res.get("is_error") and ".git" in result_text(res) and "--allow-tools" not in result_text(res)

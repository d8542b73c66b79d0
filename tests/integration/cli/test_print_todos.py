"""The to-do list in print mode: each ``todo_write`` is one line on stderr, stdout holds only the
answer; the list is kept in the session log (a record per change, a ``--continue`` run's too),
and the memory model's request never holds it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.clitools import MEMORY_MODEL, MODEL, extraction_prompt, run_cli
from tests.support.fakeapi import FakeAnthropic, text, tool_use

pytestmark = pytest.mark.timeout(90)


def item(content: str, status: str, active_form: str) -> dict[str, str]:
    return {"content": content, "status": status, "active_form": active_form}


FIRST = [
    item("Read the SECRETPARSER", "completed", "Reading the parser"),
    item("Run the tests", "in_progress", "Running the tests"),
    item("Fix the failing test", "pending", "Fixing the failing test"),
]
SECOND = [
    item("Read the SECRETPARSER", "completed", "Reading the parser"),
    item("Run the tests", "completed", "Running the tests"),
    item("Fix the failing test", "in_progress", "Fixing the failing test"),
]


def test_each_change_is_one_stderr_line_and_stdout_holds_only_the_answer(
    server: FakeAnthropic, ws: Path
) -> None:
    server.script(
        MODEL,
        tool_use("todo_write", {"todos": FIRST}, id="toolu_1"),
        tool_use("todo_write", {"todos": SECOND}, id="toolu_2"),
        text("Fixed it."),
    )
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "fix the parser")
    assert res.code == 0, res.err
    assert res.out == "Fixed it.\n"
    lines = [line for line in res.err.splitlines() if line.startswith("[todos")]
    assert lines == [
        "[todos 1/3 done · ▸ Running the tests]",
        "[todos 2/3 done · ▸ Fixing the failing test]",
    ]
    second = server.requests_for(MODEL)[1].body["messages"][-1]["content"][0]
    assert second["content"] == "The to-do list was saved: 1/3 done; now: Running the tests."
    # The tool is offered (and the model told when to use it); memory never sees the list.
    first = server.requests_for(MODEL)[0].body
    assert "todo_write" in [t["name"] for t in first["tools"]]
    [extraction] = server.requests_for(MEMORY_MODEL)
    assert "fix the parser" in extraction_prompt(extraction)
    assert "SECRETPARSER" not in json.dumps(extraction.body)


def test_the_list_is_kept_in_the_session_log_a_record_per_change_continue_too(
    server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, tool_use("todo_write", {"todos": FIRST}, id="toolu_1"), text("Half way."))
    res = run_cli(server, ws, "-p", "fix the parser", "--memory", "off")
    assert res.code == 0, res.err
    sessions = Path(os.environ["PSEUDOCLAUDE_HOME"]) / "sessions"
    [log] = sessions.glob("*.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["todos"] for r in records if r["type"] == "todos"] == [FIRST]
    server.script(MODEL, tool_use("todo_write", {"todos": SECOND}, id="toolu_2"), text("Done."))
    again = run_cli(server, ws, "-p", "go on", "--continue", "--memory", "off")
    assert again.code == 0, again.err
    assert "[todos 2/3 done · ▸ Fixing the failing test]" in again.err
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["todos"] for r in records if r["type"] == "todos"] == [FIRST, SECOND]

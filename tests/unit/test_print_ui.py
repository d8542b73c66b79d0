"""Print mode's rendering of Runner events: stdout carries only the answer, stderr the rest."""

from __future__ import annotations

import io

from app.print_mode import PrintUI
from app.provider import Retrying, TextDelta, Usage
from app.runner import RunStop, ToolCallFinished, ToolCallStarted
from app.tools import ToolResult


def render(*events: object) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    ui = PrintUI(out, err)
    for ev in events:
        ui(ev)  # type: ignore[arg-type]
    return out.getvalue(), err.getvalue()


def test_text_after_tool_calls_starts_a_new_paragraph() -> None:
    out, err = render(
        TextDelta("Let me check."),
        ToolCallStarted("t1", "read_file", {"path": "README.md"}),
        ToolCallFinished("t1", "read_file", ToolResult(content="1\t# Demo")),
        TextDelta("It is built"),
        TextDelta(" with make."),
        RunStop("completed", usage=Usage(1, 2, 3, 4)),
    )
    assert out == "Let me check.\n\nIt is built with make.\n"
    assert '⏺ read_file({"path": "README.md"})' in err and "⎿ ok: 1 # Demo" in err
    assert "[done; usage: 1 in, 2 out, 3 cache read, 4 cache write]" in err


def test_denied_and_error_results_are_tagged_once() -> None:
    _, err = render(
        ToolCallStarted("t1", "bash", {"command": "ls"}),
        ToolCallFinished("t1", "bash", ToolResult(content="bash was denied: nope", is_error=True), denied=True),
    )
    assert "⎿ denied: bash was denied: nope" in err and "denied: denied" not in err


def test_retry_voids_partial_answer_on_stderr_and_fresh_line_on_stdout() -> None:
    out, err = render(TextDelta("half"), Retrying("stream failed", 1, 0.5), TextDelta("whole"),
                      RunStop("completed"))
    assert out == "half\nwhole\n"
    assert "[retrying in 0.5s: stream failed; the partial answer above is void]" in err


def test_failed_run_reports_one_line_on_stderr() -> None:
    out, err = render(RunStop("error", "the API refused the request (400): bad"))
    assert out == "" and err == "pseudoclaude: the API refused the request (400): bad\n"

"""The bash tool's view of its result: the screen's status, output and failure, built by the tool
from what it knows (no parsing of its text), never sent to the model.

The expected values are what the chat's tool block showed for the same result text when it
parsed the text itself ("exit 0", the output without its leading section marker, notes last).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent.tools import ResultView, ToolContext, run_tool
from app.agent.tools.shell import _Outcome, _result

pytestmark = pytest.mark.plain_ws


async def bash(ws: Path, command: str, **inp: object) -> tuple[str, ResultView | None, bool]:
    r = await run_tool("bash", {"command": command, **inp}, ToolContext(workspace=ws))
    return r.content, r.view, r.is_error


async def test_exit_0(ws: Path) -> None:
    content, view, err = await bash(ws, "echo hi; echo there")
    assert content == "exit code: 0\n--- stdout ---\nhi\nthere"
    assert view == ResultView(status="exit 0", output="hi\nthere", failed=False) and not err


async def test_non_zero_with_both_streams(ws: Path) -> None:
    content, view, err = await bash(ws, "echo out; echo err >&2; exit 3")
    assert content == "exit code: 3\n--- stdout ---\nout\n--- stderr ---\nerr"
    assert view == ResultView(status="exit 3", output="out\n--- stderr ---\nerr", failed=True) and err


async def test_no_output(ws: Path) -> None:
    content, view, _ = await bash(ws, "true")
    assert content == "exit code: 0\n(no output)"
    assert view == ResultView(status="exit 0", output="", failed=False)


async def test_stderr_only(ws: Path) -> None:
    content, view, _ = await bash(ws, "echo oops >&2; exit 1")
    assert content == "exit code: 1\n--- stderr ---\noops"
    assert view == ResultView(status="exit 1", output="oops", failed=True)


async def test_killed_by_a_signal(ws: Path) -> None:
    content, view, _ = await bash(ws, "kill -9 $$")
    assert content.startswith("exit code: -9 (killed by SIGKILL)")
    assert view == ResultView(status="exit -9 SIGKILL", output="", failed=True)


@pytest.mark.timeout(60)
async def test_timeout_with_the_cap_note(ws: Path) -> None:
    ctx = ToolContext(workspace=ws, bash_timeout_max=0.5)
    r = await run_tool("bash", {"command": "echo started; sleep 30", "timeout": 100}, ctx)
    assert r.content == (
        "timed out after 0.5 s; the command and its child processes were killed\n"
        "[timeout capped at 0.5 s]\n--- stdout ---\nstarted"
    )
    assert r.view == ResultView(
        status="timed out after 0.5 s", output="started\n[timeout capped at 0.5 s]", failed=True
    )


def test_notes_follow_the_output_and_no_exit_means_no_view() -> None:
    r = _result(_Outcome(rc=0, timeout=1, leftovers=True, stdout="a\n"))
    assert r.view is not None and r.view.output.startswith("a\n[background processes")
    assert _result(_Outcome(rc=None, timeout=1)).view is None


async def test_the_model_never_gets_the_view(ws: Path) -> None:
    # The result block the model is sent carries the content alone.
    from app.agent.turn.tool_calls import result_block

    r = await run_tool("bash", {"command": "echo hi"}, ToolContext(workspace=ws))
    sent = result_block("c1", r).model_dump(mode="json")
    assert sent == {"type": "tool_result", "tool_use_id": "c1", "content": r.content}


@pytest.mark.parametrize(
    "command",
    ["echo hi; echo there", "echo out; echo err >&2; exit 3", "true", "echo oops >&2; exit 1", "kill -9 $$"],
)
async def test_a_result_read_back_from_the_session_log_has_the_view_it_had_when_it_ran(
    ws: Path, command: str
) -> None:
    """`--continue` and /resume draw old bash calls from the log's text alone: the same status line."""
    from app.agent.tools.shell import view_of_content

    content, view, _ = await bash(ws, command)
    assert view is not None and view_of_content(content) == view


def test_text_that_is_not_a_bash_result_has_no_view() -> None:
    from app.agent.tools.shell import view_of_content

    assert view_of_content("exit code: 0\nno section marker") is None
    assert view_of_content("hello") is None

"""Print mode in plan mode, through the real CLI against the fake Messages API: a scripted edit_file
is refused with the plan-mode line (no "print mode" denial: no window, nobody asked) and the file
is unchanged; exit_plan_mode's plan goes to stdout as written (terminal escapes stripped) and the
run ends there, exit 0, with no further request; the session keeps the call, so a --continue goes
on from it. The request's tools hold exit_plan_mode only in plan mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.clitools import MODEL, result_text, run_cli, tool_results
from tests.support.fakeapi import FakeAnthropic, Recorded, text, tool_use

pytestmark = pytest.mark.timeout(120)

PLAN = "# Plan\n\n1. Change `make build` to `make all` in README.md\n2. Run `make all`\n"
EDIT = {"path": "README.md", "old_string": "make build", "new_string": "make all"}
README = "# demo\nThe build command is `make build`.\n"


def names(req: Recorded) -> list[str]:
    return [t["name"] for t in req.body["tools"]]


def test_plan_mode_refuses_the_edit_prints_the_plan_and_ends_the_run(server: FakeAnthropic, ws: Path) -> None:
    server.script(
        MODEL,
        tool_use("edit_file", EDIT, id="toolu_e", text_before="Let me just fix it."),
        tool_use("exit_plan_mode", {"plan": PLAN}, id="toolu_p"),
        text("Carrying on with the next step."),  # for the --continue below, never for this run
    )
    res = run_cli(
        server, ws, "-p", "rename the build", "--permission-mode", "plan", PSEUDOCLAUDE_MEMORY_MODE="off"
    )
    assert res.code == 0, res.err
    first, second = server.requests_for(MODEL)  # no request after the plan
    # The edit was refused by plan mode: the file is as it was, and nobody could have been asked.
    [refused] = tool_results(second)
    assert refused.get("is_error") and result_text(refused).startswith("plan mode: edit_file"), refused
    assert "exit_plan_mode" in result_text(refused)
    assert "denied: print mode" not in res.err and "print mode runs it only" not in res.err
    assert (ws / "README.md").read_text() == README
    # The plan is on stdout, as written, after the model's words; the run ended there.
    assert res.out == "Let me just fix it.\n\n" + PLAN, res.out
    assert "Carrying on" not in res.out
    assert "exit_plan_mode" in names(first) and "exit_plan_mode" in names(second)
    # The session kept the call and its result: a --continue goes on from it.
    again = run_cli(server, ws, "-p", "ok, go on", "--continue", PSEUDOCLAUDE_MEMORY_MODE="off")
    assert again.code == 0, again.err
    third = server.requests_for(MODEL)[-1]
    printed = [r for r in tool_results(third) if r["tool_use_id"] == "toolu_p"]
    assert [result_text(r) for r in printed] == [
        "The plan was printed for the user, who reads it outside this conversation; this run ends "
        "here and nothing was changed."
    ]
    assert again.out.strip() == "Carrying on with the next step."
    assert "exit_plan_mode" not in names(third)  # the default mode: not offered


def test_the_printed_plan_is_stripped_of_terminal_escapes(server: FakeAnthropic, ws: Path) -> None:
    hostile = "# Plan\x1b]0;owned\x07\n\n1. \x1b[31mred\x1b[0m step\x1b[2J\n"
    server.script(MODEL, tool_use("exit_plan_mode", {"plan": hostile}, id="toolu_p"))
    res = run_cli(server, ws, "-p", "plan", "--permission-mode", "plan", PSEUDOCLAUDE_MEMORY_MODE="off")
    assert res.code == 0, res.err
    assert res.out == "# Plan\n\n1. red step\n", repr(res.out)
    assert "\x1b" not in res.out and "\x07" not in res.out


def test_exit_plan_mode_is_offered_only_in_plan_mode(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, text("default"), text("planning"))
    assert run_cli(server, ws, "-p", "hi", PSEUDOCLAUDE_MEMORY_MODE="off").code == 0
    plain = run_cli(server, ws, "-p", "hi", "--permission-mode", "plan", PSEUDOCLAUDE_MEMORY_MODE="off")
    assert plain.code == 0, plain.err
    default, planning = server.requests_for(MODEL)
    assert "exit_plan_mode" not in names(default)
    assert "exit_plan_mode" in names(planning)
    assert [n for n in names(planning) if n != "exit_plan_mode"] == names(default)

"""Print mode's permission modes, through the real CLI against the fake Messages API.

``--permission-mode plan``: every call that would change something (edit_file, write_file, bash) is
refused with the plan-mode line — not print mode's "nobody to ask" refusal, and not even with a
rule or --allow-tools that would allow it — the files stay as they were, and read_file still runs.
``--permission-mode accept-edits``: an edit inside the workspace runs with no rule, one outside
is refused, bash still needs a rule. ``permission_mode`` in a project's shared settings.toml:
accept-edits waits for trust (one line on stderr), plan applies at once; the flag beats the file;
a bad flag value is a usage error."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent.config.project_trust import ProjectTrust
from app.agent.permissions.gate import NO_ASK
from app.agent.permissions.loading import load_permission_rules
from tests.support.clitools import MODEL, result_text, run_cli, tool_results
from tests.support.fakeapi import FakeAnthropic, message, text, tool_block

pytestmark = pytest.mark.timeout(120)


def _plan_line(tool: str) -> str:
    return (
        f"plan mode: {tool} changes things and does not run while planning; "
        "propose the plan with exit_plan_mode"
    )


def _results(server: FakeAnthropic) -> dict[str, str]:
    """The last request's tool results by call id."""
    return {r["tool_use_id"]: result_text(r) for r in tool_results(server.requests_for(MODEL)[-1])}


def _edits(ws: Path) -> object:
    return message(
        tool_block("read_file", {"path": "notes.txt"}, id="toolu_read"),
        tool_block(
            "edit_file", {"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}, id="toolu_edit"
        ),
        tool_block("write_file", {"path": "new.txt", "content": "x"}, id="toolu_write"),
        tool_block("bash", {"command": f"touch {ws / 'pwned'}"}, id="toolu_bash"),
        stop_reason="tool_use",
    )


def test_plan_refuses_every_change_with_the_plan_line_and_read_file_still_runs(
    server: FakeAnthropic, ws: Path
) -> None:
    (ws / "notes.txt").write_text("alpha\n")
    server.script(MODEL, _edits(ws), text("Here is what I would do."))
    res = run_cli(
        server,
        ws,
        "-p",
        "change the notes",
        "--permission-mode",
        "plan",
        # Even what a rule allows does not run while planning.
        "--allow-tools",
        "edit_file,bash",
        PSEUDOCLAUDE_MEMORY_MODE="off",
    )
    assert res.code == 0, res.err
    results = _results(server)
    assert "alpha" in results["toolu_read"]  # read_file ran
    for call, tool in (("toolu_edit", "edit_file"), ("toolu_write", "write_file"), ("toolu_bash", "bash")):
        assert results[call] == _plan_line(tool)
    assert (ws / "notes.txt").read_text() == "alpha\n"
    assert not (ws / "new.txt").exists() and not (ws / "pwned").exists()
    # The plan reason, never print mode's "nobody to ask" one (no window: print mode has none).
    assert NO_ASK not in res.err and "denied: print mode" not in res.err
    assert _plan_line("edit_file") in res.err
    assert "Here is what I would do." in res.out


def test_accept_edits_runs_an_edit_inside_the_workspace_and_nothing_else_without_a_rule(
    server: FakeAnthropic, ws: Path, tmp_path: Path
) -> None:
    (ws / "notes.txt").write_text("alpha\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("alpha\n")
    server.script(
        MODEL,
        message(
            tool_block(
                "edit_file", {"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}, id="toolu_in"
            ),
            tool_block(
                "edit_file",
                {"path": str(outside), "old_string": "alpha", "new_string": "beta"},
                id="toolu_out",
            ),
            tool_block(
                "write_file", {"path": ".PseudoClaude/settings.local.toml", "content": "x"}, id="toolu_cfg"
            ),
            tool_block("bash", {"command": f"touch {ws / 'pwned'}"}, id="toolu_bash"),
            stop_reason="tool_use",
        ),
        text("done"),
    )
    res = run_cli(
        server, ws, "-p", "edit", "--permission-mode", "accept-edits", PSEUDOCLAUDE_MEMORY_MODE="off"
    )
    assert res.code == 0, res.err
    results = _results(server)
    assert (ws / "notes.txt").read_text() == "beta\n"
    assert "Error" not in results["toolu_in"] and "denied" not in results["toolu_in"]
    assert outside.read_text() == "alpha\n" and "outside the workspace" in results["toolu_out"]
    assert not (ws / ".PseudoClaude" / "settings.local.toml").exists()
    assert results["toolu_cfg"].startswith("write_file was denied: print mode runs it only when a rule")
    assert results["toolu_bash"].startswith("bash was denied: print mode runs it only when a rule")
    assert not (ws / "pwned").exists()


def test_without_the_mode_the_same_edit_is_refused(server: FakeAnthropic, ws: Path) -> None:
    (ws / "notes.txt").write_text("alpha\n")
    server.script(
        MODEL,
        message(
            tool_block(
                "edit_file", {"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}, id="toolu_in"
            ),
            stop_reason="tool_use",
        ),
        text("done"),
    )
    res = run_cli(server, ws, "-p", "edit", PSEUDOCLAUDE_MEMORY_MODE="off")
    assert res.code == 0, res.err
    assert _results(server)["toolu_in"].startswith("edit_file was denied: print mode")
    assert (ws / "notes.txt").read_text() == "alpha\n"


def _project(ws: Path, mode: str) -> None:
    (ws / ".PseudoClaude").mkdir(exist_ok=True)
    (ws / ".PseudoClaude" / "settings.toml").write_text(f'permission_mode = "{mode}"\n')


def _one_edit(server: FakeAnthropic) -> None:
    server.script(
        MODEL,
        message(
            tool_block(
                "edit_file", {"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}, id="toolu_e"
            ),
            stop_reason="tool_use",
        ),
        text("done"),
    )


def test_a_projects_accept_edits_waits_for_trust_in_print_mode(
    server: FakeAnthropic, ws: Path, isolated_home: Path
) -> None:
    (ws / "notes.txt").write_text("alpha\n")
    _project(ws, "accept-edits")
    _one_edit(server)
    res = run_cli(server, ws, "-p", "edit", PSEUDOCLAUDE_MEMORY_MODE="off")
    assert res.code == 0, res.err
    [line] = [x for x in res.err.splitlines() if "permission_mode" in x]
    assert "accept-edits came with the repository and waits for your trust" in line
    assert (ws / "notes.txt").read_text() == "alpha\n"  # not in force: the edit was refused

    pending = load_permission_rules(ws, isolated_home).pending_trust
    assert pending is not None
    ProjectTrust(ws, isolated_home).trust("permissions", pending.digest)  # the app's trust window
    _one_edit(server)
    res = run_cli(server, ws, "-p", "edit", PSEUDOCLAUDE_MEMORY_MODE="off")
    assert res.code == 0, res.err
    assert (ws / "notes.txt").read_text() == "beta\n"
    assert "permission_mode" not in res.err


def test_a_projects_plan_applies_at_once_and_the_flag_beats_it(server: FakeAnthropic, ws: Path) -> None:
    (ws / "notes.txt").write_text("alpha\n")
    _project(ws, "plan")
    _one_edit(server)
    res = run_cli(server, ws, "-p", "edit", "--allow-tools", "edit_file", PSEUDOCLAUDE_MEMORY_MODE="off")
    assert res.code == 0, res.err
    assert _results(server)["toolu_e"] == _plan_line("edit_file")
    _one_edit(server)
    res = run_cli(
        server, ws, "-p", "edit", "--permission-mode", "accept-edits", PSEUDOCLAUDE_MEMORY_MODE="off"
    )
    assert res.code == 0, res.err
    assert (ws / "notes.txt").read_text() == "beta\n"


def test_the_environment_sets_the_mode_and_a_bad_flag_is_a_usage_error(
    server: FakeAnthropic, ws: Path
) -> None:
    (ws / "notes.txt").write_text("alpha\n")
    _one_edit(server)
    res = run_cli(
        server, ws, "-p", "edit", PSEUDOCLAUDE_MEMORY_MODE="off", PSEUDOCLAUDE_PERMISSION_MODE="plan"
    )
    assert res.code == 0, res.err
    assert _results(server)["toolu_e"] == _plan_line("edit_file")
    before = len(server.requests)
    res = run_cli(server, ws, "-p", "edit", "--permission-mode", "yolo")
    assert res.code == 2
    [line] = res.err.strip().splitlines()
    assert "--permission-mode" in line and "'default', 'accept-edits', 'plan'" in line
    assert len(server.requests) == before

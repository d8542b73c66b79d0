"""``pseudoclaude rewind`` and ``pseudoclaude doctor`` end to end: turns made by print mode against
the fake Messages API (the real tools, the real session log), then the rewind CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.clitools import MEMORY_MODEL, MODEL, ROOT, cli_env, create_op, ops_answer, run_cli
from tests.support.fakeapi import FakeAnthropic, text, tool_use

pytestmark = pytest.mark.timeout(90)

ORIGINAL = b"alpha\nbeta\ngamma\n"
LIST_LINE = re.compile(r"^(\d+)  (\d{4}-\d\d-\d\d \d\d:\d\d)  (.+?)  (\S.*)$")


def _turn_with_edits(server: FakeAnthropic, ws: Path) -> None:
    (ws / "a.txt").write_bytes(ORIGINAL)
    server.script(
        MODEL,
        tool_use("edit_file", {"path": "a.txt", "old_string": "beta", "new_string": "BETA"}),
        tool_use("write_file", {"path": "a.txt", "content": "rewritten by the agent\n"}),
        tool_use("write_file", {"path": "made/new.txt", "content": "a new file\n"}),
        text("All three writes are done."),
    )
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Layout of a.txt", "a.txt holds three lines."))))
    res = run_cli(server, ws, "-p", "rework a.txt\nand add a file", "--allow-tools", "write_file,edit_file")
    assert res.code == 0, res.err
    assert (ws / "a.txt").read_bytes() == b"rewritten by the agent\n"


def test_list_then_rewind_restores_the_files_exactly(server: FakeAnthropic, ws: Path) -> None:
    _turn_with_edits(server, ws)
    listed = run_cli(None, ws, "rewind", "--list")
    assert listed.code == 0, listed.err
    [line] = listed.out.splitlines()
    m = LIST_LINE.match(line)
    assert m, line
    assert (m[1], m[3].rstrip(), m[4]) == ("1", "a.txt, made/new.txt", "rework a.txt")  # named, not "2 files"

    res = run_cli(None, ws, "rewind", "1", "--files")
    assert res.code == 0, res.err
    assert (ws / "a.txt").read_bytes() == ORIGINAL
    assert not (ws / "made" / "new.txt").exists()
    assert "restored a.txt" in res.out and "deleted made/new.txt" in res.out
    assert "recorded as turn 2: `pseudoclaude rewind 2` undoes it" in res.out
    # Memory stays: the batch the turn's job applied is named, and the card is still there.
    assert re.search(r"memory is not rewound: turn 1's memory job \S+ is applied as batch \S+", res.out), (
        res.out
    )
    assert list((ws / ".PseudoClaude" / "memory").glob("project_knowledge_*.md"))
    lines = run_cli(None, ws, "rewind", "--list").out.splitlines()
    assert lines[1].startswith("2  ") and lines[1].endswith("[rewind to before turn 1: files]")


@pytest.mark.parametrize(("columns", "shown"), [("80", 1), ("100", 3)])
def test_list_names_the_files_a_turn_changed_as_many_as_fit_the_width_then_counts_the_rest(
    server: FakeAnthropic, ws: Path, columns: str, shown: int
) -> None:
    names = [f"src/part_{i}.py" for i in range(9)]
    server.script(
        MODEL,
        *(tool_use("write_file", {"path": n, "content": f"{n}\n"}) for n in names),
        text("Nine files written."),
    )
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "split the module", "--allow-tools", "write_file")
    assert res.code == 0, res.err
    listed = run_cli(None, ws, "rewind", "--list", COLUMNS=columns)  # not a terminal: COLUMNS, else 100
    assert listed.code == 0, listed.err
    [line] = listed.out.splitlines()
    m = LIST_LINE.match(line)
    assert m, line
    assert m[3].rstrip() == ", ".join(names[:shown]) + f" +{9 - shown} more"
    assert m[4] == "split the module" and len(line) <= int(columns)


def test_a_hand_edit_is_refused_in_one_line_and_force_overwrites_it(server: FakeAnthropic, ws: Path) -> None:
    _turn_with_edits(server, ws)
    (ws / "a.txt").write_bytes(b"typed by hand\n")
    refused = run_cli(None, ws, "rewind", "1")
    assert refused.code == 1
    assert refused.err.count("\n") == 1 and "a.txt changed since the agent last wrote it" in refused.err
    assert "--force" in refused.err and refused.out == ""
    assert (ws / "a.txt").read_bytes() == b"typed by hand\n" and (ws / "made" / "new.txt").exists()

    forced = run_cli(None, ws, "rewind", "1", "--force")
    assert forced.code == 0, forced.err
    assert (ws / "a.txt").read_bytes() == ORIGINAL and not (ws / "made" / "new.txt").exists()
    undo = run_cli(None, ws, "rewind", "2")
    assert undo.code == 0, undo.err
    assert (ws / "a.txt").read_bytes() == b"typed by hand\n"
    assert (ws / "made" / "new.txt").read_bytes() == b"a new file\n"


def test_a_conversation_rewind_leaves_no_trace_in_the_next_request(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, text("alpha answer"), text("bravo answer"), text("charlie answer"))
    server.script(MEMORY_MODEL, text("[]"), text("[]"), text("[]"))
    assert run_cli(server, ws, "-p", "alpha question").code == 0
    assert run_cli(server, ws, "--continue", "-p", "bravo question").code == 0
    res = run_cli(None, ws, "rewind", "2", "--conversation")
    assert res.code == 0, res.err
    assert "conversation: back to before turn 2" in res.out
    assert run_cli(server, ws, "--continue", "-p", "charlie question").code == 0
    sent = json.dumps(server.requests_for(MODEL)[-1].body["messages"])
    assert "alpha question" in sent and "alpha answer" in sent
    assert "bravo" not in sent
    listed = run_cli(None, ws, "rewind", "--list").out.splitlines()
    assert [line.split("  ")[0] for line in listed] == ["1", "2", "3", "4"]
    assert listed[1].endswith("(rewound)") and listed[3].endswith("charlie question")


def test_usage_errors_and_a_missing_turn(server: FakeAnthropic, ws: Path) -> None:
    assert run_cli(None, ws, "rewind", "--list").code == 1  # no session yet: one line
    _turn_with_edits(server, ws)
    assert run_cli(None, ws, "rewind").code == 2
    assert run_cli(None, ws, "rewind", "1", "--files", "--conversation").code == 2
    missing = run_cli(None, ws, "rewind", "7")
    assert missing.code == 1 and missing.err.count("\n") == 1 and "no turn 7" in missing.err


def test_doctor_reports_the_checkpoints(server: FakeAnthropic, ws: Path) -> None:
    _turn_with_edits(server, ws)
    res = run_cli(None, ws, "doctor")
    assert res.code == 0, res.err
    assert re.match(r"checkpoints: [\d.]+ (B|KiB|MiB) in 1 session\(s\) at ", res.out), res.out
    assert "500 MB, 30 days" in res.out


def test_the_rewind_cli_loads_neither_the_sdk_nor_textual(ws: Path) -> None:
    code = (
        "import sys\n"
        "from app.cli.main import main\n"
        f"main(['-C', {str(ws)!r}, 'rewind', '--list'])\n"
        f"main(['-C', {str(ws)!r}, 'doctor'])\n"
        "print(sorted(m for m in ('anthropic', 'textual') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=cli_env(None), capture_output=True, text=True, timeout=60
    )
    assert proc.stdout.splitlines()[-1] == "[]", proc.stdout + proc.stderr
    assert os.environ["PSEUDOCLAUDE_HOME"]  # the child used the test's own home

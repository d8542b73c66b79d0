"""`pseudoclaude memory ...` against a closed stdout, bad arguments and hostile note text."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.main import main
from memory.constants import Level, NoteType
from memory.store.stores import MemoryStores
from tests.support.memtools import write_note

# `ws` here is an empty folder, not the shared git work tree.
pytestmark = pytest.mark.plain_ws

ROOT = Path(__file__).resolve().parents[3]
ESCAPES = ("\x1b", "\x07", "\x9b", "\x9d")


def _stores(repo: Path) -> MemoryStores:
    return MemoryStores(os.path.realpath(repo))


def _many_notes(repo: Path, n: int = 300, body: str = "body\n") -> None:
    stores = _stores(repo)
    for i in range(n):
        write_note(
            stores,
            Level.PROJECT,
            f"project_knowledge_note-{i:04}.md",
            f"Note {i} " + "t" * 80,
            body,
            summary="s" * 150,
        )


class ClosedPipe(io.TextIOBase):
    """A stdout whose reader went away after ``room`` characters (``| head -1``)."""

    def __init__(self, room: int = 0) -> None:
        self.room = room
        self.got = ""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        if len(self.got) + len(s) > self.room:
            raise BrokenPipeError(32, "Broken pipe")
        self.got += s
        return len(s)

    def flush(self) -> None:
        if len(self.got) >= self.room:
            raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no file descriptor")


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["index"],
        ["show", "project", "project_knowledge_note-0001.md"],
        ["show", "project", "MEMORY.md"],
        ["pending"],
        ["pending", "--all"],
        ["doctor"],
        ["undo"],
        ["apply", os.devnull],
        ["flush", "--timeout", "5"],
        ["approve", "nojob"],
        ["reject", "nojob", "0"],
    ],
)
def test_a_closed_stdout_stops_printing_quietly_and_keeps_the_exit_code(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    _many_notes(repo, 5)
    code = main(["memory", *args, "-C", str(repo)])  # none of these changes anything
    expected_err = capsys.readouterr().err
    monkeypatch.setattr(sys, "stdout", ClosedPipe(room=10))
    assert main(["memory", *args, "-C", str(repo)]) == code
    err = capsys.readouterr().err
    assert "Broken pipe" not in err and "BrokenPipe" not in err
    assert err == expected_err


def test_console_script_memory_list_piped_into_head_exits_0_without_a_message(repo: Path) -> None:
    # Far more than a pipe buffer (64 KiB) in many writes, so they really meet the closed pipe.
    _many_notes(repo, 400)
    args = ["list"]
    script = Path(sys.executable).with_name("pseudoclaude")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "app.cli.main"]
    proc = subprocess.Popen(
        [*cmd, "memory", *args, "-C", str(repo)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `head -1` does after its line
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    assert first and err == b""


@pytest.mark.parametrize("value", ["-5", "nan", "NaN", "inf", "-inf", "1e400", "0", "abc", ""])
def test_flush_timeout_must_be_a_positive_finite_number(
    repo: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as e:
        main(["memory", "flush", "--timeout", value, "-C", str(repo)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--timeout" in err


def test_flush_timeout_accepts_fractions(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "flush", "--timeout", "0.5", "-C", str(repo)]) == 0
    assert "no spooled memory jobs" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args", [["approve", ""], ["reject", "  "], ["approve", "job", "-1"], ["reject", "job", "x"]]
)
def test_review_arguments_are_checked_before_any_job_is_touched(
    repo: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        main(["memory", *args, "-C", str(repo)])
    assert e.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


HOSTILE_BODY = "before \x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07 middle \x1b]0;pwned\x07 after \x1b[31mred\x1b[0m\n"


def _hostile_note(repo: Path) -> str:
    stores = _stores(repo)
    name = "project_knowledge_evil.md"
    write_note(stores, Level.PROJECT, name, "Evil", HOSTILE_BODY, NoteType.PROJECT_KNOWLEDGE, summary="fine")
    folder = stores.store(Level.PROJECT).dir
    # A hand-written title and summary carrying raw escapes (the YAML is double-quoted, so it loads).
    (folder / "project_knowledge_title.md").write_text(
        '---\ntitle: "Evil \\e[31mRED\\e[0m \\e]0;pwned\\a"\nsummary: "s \\e]52;c;eA==\\a"\n'
        "type: project_knowledge\ncreated: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n"
        "source: manual\n---\nbody \x1b]0;pwned\x07\n"
    )
    (folder / "MEMORY.md").write_text(
        "- [project_knowledge] Evil \x1b]0;pwned\x07 — x (project_knowledge_evil.md)\n"
    )
    return name


def _assert_terminal_safe(text: str) -> None:
    for c in ESCAPES:
        assert c not in text, repr(text)
    # Whole sequences go, not just their ESC: no "]0;pwned" remnant. (The YAML's own escaped
    # spelling, backslash-e, is plain text and may be shown.)
    visible = text.replace("\\e]0;pwned\\a", "").replace("\\e]52;c;eA==\\a", "")
    assert "pwned" not in visible and "]52;" not in visible and "ZXZpbCBjbGlwYm9hcmQ" not in visible


@pytest.mark.parametrize(
    "args",
    [
        ["show", "project", "project_knowledge_evil.md"],
        ["show", "project", "project_knowledge_title.md"],
        ["show", "project", "MEMORY.md"],
        ["list"],
        ["index"],
        ["doctor"],
        ["show", "project", "nope\x1b]0;pwned\x07.md"],
    ],
)
def test_memory_commands_never_write_raw_osc52_or_osc0_sequences(
    repo: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    _hostile_note(repo)
    main(["memory", *args, "-C", str(repo)])
    out, err = capsys.readouterr()
    _assert_terminal_safe(out)
    _assert_terminal_safe(err)


def test_show_keeps_the_visible_text_of_a_hostile_note(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = _hostile_note(repo)
    assert main(["memory", "show", "project", name, "-C", str(repo)]) == 0
    out = capsys.readouterr().out
    assert out.endswith("before  middle  after red\n")


class FullDisk(ClosedPipe):
    def write(self, s: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        raise OSError(28, "No space left on device")


@pytest.mark.parametrize("args", [["list"], ["show", "project", "project_knowledge_note-0001.md"]])
def test_a_full_disk_behind_stdout_is_one_line_and_exit_1(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    _many_notes(repo, 3)
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", FullDisk())
    assert main(["memory", *args, "-C", str(repo)]) == 1
    assert capsys.readouterr().err == "pseudoclaude: No space left on device\n"


def test_a_closed_stdout_descriptor_at_start_is_not_an_error(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _many_notes(repo, 3)
    monkeypatch.setattr(sys, "stdout", None)  # what Python gives a process started with `>&-`
    assert main(["memory", "list", "-C", str(repo)]) == 0
    assert capsys.readouterr().err == ""

"""The reading `memory` commands as short processes: one look at each store folder, no collector
passes over the cards' objects, and an end without the interpreter's teardown once the output
is flushed (app/cli/main.py ``entry``)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main as cli_main
from app.cli.memory import commands as memory_commands
from memory.constants import MANUAL_SOURCE, Level
from memory.extract.parser import parse_and_validate
from memory.store.stores import MemoryStores
from tests.support.memtools import write_note

pytestmark = pytest.mark.plain_ws

ROOT = Path(__file__).resolve().parents[3]


def _cards(repo: Path, n: int) -> MemoryStores:
    stores = MemoryStores(os.path.realpath(repo))
    stores.trust_project()
    for i in range(n):
        write_note(
            stores, Level.PROJECT, f"project_knowledge_c{i:03}.md", f"Card {i}", "body\n", summary=f"s {i}"
        )
    return stores


def test_index_stats_each_card_once_while_its_derived_index_check_runs(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stores = _cards(repo, 40)
    stores.rebuild_indexes()  # MEMORY.md in step (a batch leaves it so), just written: the check runs
    want = stores.prompt_index().text
    capsys.readouterr()
    stats: dict[str, int] = {}
    real = os.lstat

    def counted(path: object, *args: object, **kw: object) -> os.stat_result:
        stats[str(path)] = stats.get(str(path), 0) + 1
        return real(path, *args, **kw)  # type: ignore[arg-type]

    checks: list[int] = []
    real_check = MemoryStores.refresh_indexes
    monkeypatch.setattr(
        MemoryStores, "refresh_indexes", lambda self, *a: checks.append(1) or real_check(self, *a)
    )
    monkeypatch.setattr(os, "lstat", counted)
    assert cli_main.main(["memory", "index", "-C", str(repo)]) == 0
    out = capsys.readouterr().out
    assert out.strip() == want.strip() and "Card 39" in out
    cards = {p: n for p, n in stats.items() if "project_knowledge_c" in p}
    assert checks and len(cards) == 40
    assert max(cards.values()) == 1, sorted(cards.items())[:3]  # the check's pass, read again as it was


def test_a_pinned_store_sees_what_this_process_writes(repo: Path) -> None:
    stores = _cards(repo, 3)
    stores.pin_listings()
    first = [c[0] for c in stores.project.keyed_cards()]
    assert len(first) == 3
    # Another process's change after the look: the command answers as of its one look...
    write_note(stores, Level.PROJECT, "project_knowledge_other.md", "Other", "body\n")
    assert [c[0] for c in stores.project.keyed_cards()] == first
    # ...and this process's own batch is seen at once (its writes went through the store's files).
    parsed = parse_and_validate(
        '[{"action": "create", "level": "project", "type": "project_knowledge", '
        '"title": "Mine", "content": "x"}]'
    )
    result = stores.apply(parsed.ops, source=MANUAL_SOURCE, rejected=parsed.rejected, label="t")
    assert result.applied
    names = [c[0] for c in stores.project.keyed_cards()]
    assert "project_knowledge_mine.md" in names and "project_knowledge_other.md" in names
    # Unpinned (the app's runtime), every pass stats the cards again.
    unpinned = MemoryStores(os.path.realpath(repo))
    unpinned.project.keyed_cards()
    write_note(stores, Level.PROJECT, "project_knowledge_third.md", "Third", "body\n")
    assert "project_knowledge_third.md" in [c[0] for c in unpinned.project.keyed_cards()]


@pytest.mark.parametrize(
    ("command", "collector"),
    [("index", False), ("list", False), ("apply", False), ("flush", True), ("consolidate", True)],
)
def test_the_collector_is_off_while_a_command_that_calls_no_model_runs(
    repo: Path, monkeypatch: pytest.MonkeyPatch, command: str, collector: bool
) -> None:
    _cards(repo, 2)
    seen: list[bool] = []
    monkeypatch.setitem(
        memory_commands._HANDLERS, command, lambda stores, args: seen.append(gc.isenabled()) or 0
    )
    args = ["apply", os.devnull] if command == "apply" else [command]
    assert gc.isenabled()
    assert cli_main.main(["memory", *args, "-C", str(repo)]) == 0
    assert seen == [collector]
    assert gc.isenabled()  # as it was, for a caller in this process


class _Exited(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


@pytest.mark.parametrize(
    ("args", "at_once"),
    [
        (["index"], True),
        (["list"], True),
        (["search", "card"], True),
        (["pending"], False),
        (["apply", "ops.json"], False),
    ],
)
def test_entry_ends_a_reading_command_at_once_after_flushing_its_output(
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    args: list[str],
    at_once: bool,
) -> None:
    _cards(repo, 5)
    if "ops.json" in args:
        ops = repo / "ops.json"
        ops.write_text(
            '[{"action": "create", "level": "project", "type": "project_knowledge", "title": "T", '
            '"content": "x"}]',
            encoding="utf-8",
        )
        args = ["apply", str(ops)]

    def exited(code: int) -> None:
        raise _Exited(code)

    monkeypatch.setattr(os, "_exit", exited)
    monkeypatch.setattr(sys, "argv", ["pseudoclaude", "memory", *args, "-C", str(repo)])
    with pytest.raises(_Exited if at_once else SystemExit) as e:
        cli_main.entry()
    assert e.value.code == 0
    if args == ["index"]:
        assert "Card 4" in capfd.readouterr().out  # written before the end


def _console() -> list[str]:
    script = Path(sys.executable).with_name("pseudoclaude")
    return [str(script)] if script.exists() else [sys.executable, "-m", "app.cli.main"]


def test_a_reading_command_in_its_own_process_delivers_its_whole_output(repo: Path) -> None:
    _cards(repo, 300)
    proc = subprocess.run(
        [*_console(), "memory", "list", "-C", str(repo)], cwd=ROOT, capture_output=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stderr == b""
    lines = proc.stdout.decode().splitlines()
    assert sum(1 for line in lines if "project_knowledge_c" in line) == 300
    assert lines[-1].startswith("user store:")  # the last line written, there too
    closed = subprocess.run(
        [*_console(), "memory", "index", "-C", str(repo)],
        cwd=ROOT,
        capture_output=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=120,
        preexec_fn=lambda: os.close(1),
    )  # started with `>&-`
    assert closed.returncode == 0 and closed.stderr == b""

"""Prompt history (app/services/prompt_history.py): per workspace, private, bounded, survives restarts."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from app.services.prompt_history import MAX_ENTRIES, MAX_ENTRY_CHARS, PromptHistory

# `ws` here is an empty folder, not the shared git work tree.
pytestmark = pytest.mark.plain_ws


def test_prompts_persist_across_instances_in_order_per_workspace(tmp_path: Path) -> None:
    home = tmp_path / "home"
    a, b = tmp_path / "a", tmp_path / "b"
    h = PromptHistory(home, a)
    h.append("first")
    h.append("second\nwith a newline and ünïcode")
    PromptHistory(home, b).append("other workspace")
    assert PromptHistory(home, a).load() == ["first", "second\nwith a newline and ünïcode"]
    assert PromptHistory(home, b).load() == ["other workspace"]
    assert h.path.parent == home / "prompts" and h.path.suffix == ".jsonl"


def test_the_history_file_is_private_to_the_user(tmp_path: Path) -> None:
    h = PromptHistory(tmp_path / "home", tmp_path / "ws")
    h.append("my api key is in here")
    assert stat.S_IMODE(h.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(h.path.parent.stat().st_mode) == 0o700


def test_blank_and_oversized_prompts_are_not_kept(tmp_path: Path) -> None:
    h = PromptHistory(tmp_path / "home", tmp_path / "ws")
    h.append("   \n ")
    h.append("x" * (MAX_ENTRY_CHARS + 1))
    h.append("kept")
    assert h.load() == ["kept"]


def test_the_history_is_bounded_to_the_last_entries_on_disk_too(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    h = PromptHistory(home, ws, max_entries=5)
    for k in range(23):
        h.append(f"p{k}")
    assert h.load() == [f"p{k}" for k in range(18, 23)]
    # The file is compacted, not left to grow: never more than twice the bound.
    assert len(h.path.read_text().splitlines()) <= 10
    assert stat.S_IMODE(h.path.stat().st_mode) == 0o600
    assert PromptHistory(home, ws, max_entries=5).load() == [f"p{k}" for k in range(18, 23)]


def test_the_default_bound_is_one_thousand(tmp_path: Path) -> None:
    h = PromptHistory(tmp_path / "home", tmp_path / "ws")
    for k in range(MAX_ENTRIES + 150):
        h.append(f"p{k}")
    loaded = PromptHistory(tmp_path / "home", tmp_path / "ws").load()
    assert MAX_ENTRIES == 1000 and len(loaded) == 1000 and loaded[-1] == f"p{MAX_ENTRIES + 149}"


def test_a_torn_or_foreign_line_is_skipped_and_the_rest_loads(tmp_path: Path) -> None:
    h = PromptHistory(tmp_path / "home", tmp_path / "ws")
    h.append("before")
    with open(h.path, "ab") as f:
        f.write(b'{"not": "a string"}\n\xff\xfe\n"torn by a crash')
    h.append("after")
    assert PromptHistory(tmp_path / "home", tmp_path / "ws").load() == ["before", "after"]

"""The memory side panel's state (app/tui/panel/state.py), built from real stores on disk."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from app.services.index import index_view, note_files
from app.tui.panel.state import (
    NO_PROJECT_LEVEL,
    UNTRUSTED_NOTE,
    build_panel_state,
    job_line,
    state_files,
)
from memory.constants import INDEX_MAX_LINES, Level, NoteType
from memory.jobs.views import JobView
from memory.store.stores import MemoryStores
from tests.support.memtools import create, make_env, write_note

# `ws` here is an empty folder, not the shared git work tree.
pytestmark = pytest.mark.plain_ws


def _titles(cards: tuple) -> list[str]:
    return [c.title for c in cards]


def test_both_levels_show_type_title_and_summary_as_the_merged_index_has_them(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    res = stores.apply(
        [
            (0, create("project", "Build command", "make build", summary="run make build, not npm")),
            (1, create("user", "Prefers tabs", type_="user_preference", summary="indent with tabs")),
            (2, create("user", "No summary here", type_="reference_material")),
        ],
        source="test",
    )
    assert not res.rejected
    state = build_panel_state(index_view(stores), [], None)
    assert [(c.type, c.title, c.summary) for c in state.project] == [
        ("project_knowledge", "Build command", "run make build, not npm")
    ]
    assert {(c.type, c.title, c.summary) for c in state.user} == {
        ("user_preference", "Prefers tabs", "indent with tabs"),
        ("reference_material", "No summary here", ""),
    }
    assert state.project[0].filename == "project_knowledge_build-command.md"
    assert state.cut_note is None and state.project_note is None and state.jobs == ()
    assert not any(c.new for c in state.project + state.user)
    assert not any(c.untrusted for c in state.project + state.user)  # a trusted store's cards


def test_a_separator_inside_a_summary_is_split_where_the_note_says(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    stores.apply(
        [(0, create("user", "Style", type_="user_preference", summary="tabs — not spaces — always"))],
        source="test",
    )
    [card] = build_panel_state(index_view(stores), [], None).user
    assert (card.title, card.summary) == ("Style", "tabs — not spaces — always")


def test_cards_that_arrived_after_the_run_started_are_marked_new(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    stores.apply([(0, create("project", "Old fact"))], source="test")
    at_run_start = note_files(stores)
    assert state_files(build_panel_state(index_view(stores), [], None)) == at_run_start
    stores.apply(
        [(0, create("project", "New fact")), (1, create("user", "New pref", type_="user_preference"))],
        source="test",
    )

    state = build_panel_state(index_view(stores), [], at_run_start)
    assert {c.title: c.new for c in state.project} == {"Old fact": False, "New fact": True}
    assert [(c.title, c.new) for c in state.user] == [("New pref", True)]
    # Before any Run nothing counts as new.
    assert not any(c.new for c in build_panel_state(index_view(stores), [], None).project)


def test_an_index_cut_by_the_200_line_limit_says_how_many_notes_are_hidden(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    n = INDEX_MAX_LINES + 20
    res = stores.apply([(k, create("project", f"Fact {k:03}")) for k in range(n)], source="test")
    assert len(res.applied) == n
    state = build_panel_state(index_view(stores), [], None)
    hidden = n - len(state.project)
    assert hidden > 20  # headers and the overflow line take lines too
    assert state.cut_note == f"{hidden} cards not in the prompt"


def test_an_index_cut_by_the_25_kib_limit_says_so(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    long = "x" * 190
    n = 140  # ~140 × 260 bytes > 25 KiB, far fewer than 200 lines
    stores.apply(
        [
            (k, create("user", f"Pref {k:03}", type_="user_preference", summary=f"{k} {long}"))
            for k in range(n)
        ],
        source="test",
    )
    state = build_panel_state(index_view(stores), [], None)
    assert 0 < len(state.user) < n
    assert state.cut_note == f"{n - len(state.user)} cards not in the prompt"


def test_a_workspace_whose_project_store_is_the_user_store_says_it_has_no_project_level(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "me"
    ws.mkdir()
    stores = MemoryStores(os.path.realpath(ws), ws / ".PseudoClaude")
    stores.apply([(0, create("user", "Only user", type_="user_preference"))], source="test")
    state = build_panel_state(index_view(stores), [], None)
    assert state.project == () and state.project_note == NO_PROJECT_LEVEL
    assert _titles(state.user) == ["Only user"]


class _UntrustedStores(MemoryStores):
    project_trusted = False  # what memory/store/trust.py reports for a store that came with a clone


def test_an_untrusted_project_store_is_listed_from_disk_with_its_note_and_never_marked_new(
    tmp_path: Path,
) -> None:
    (tmp_path / "ws" / ".git").mkdir(parents=True)
    stores = _UntrustedStores(os.path.realpath(tmp_path / "ws"), tmp_path / "home")
    # As a cloned repository brings it: note files and a MEMORY.md nobody here wrote.
    write_note(
        stores, Level.PROJECT, "project_knowledge_cloned.md", "Cloned fact", "body", summary="from the repo"
    )
    (stores.project.dir / "MEMORY.md").write_text(
        "- [project_knowledge] Cloned fact — from the repo (project_knowledge_cloned.md)\n"
    )
    stores.user.dir.mkdir(parents=True)
    write_note(stores, Level.USER, "user_preference_mine.md", "Mine", "b", type_=NoteType.USER_PREFERENCE)
    (stores.user.dir / "MEMORY.md").write_text("- [user_preference] Mine (user_preference_mine.md)\n")

    state = build_panel_state(index_view(stores), [], frozenset())
    assert state.project_note == UNTRUSTED_NOTE
    assert [(c.title, c.summary, c.new) for c in state.project] == [("Cloned fact", "from the repo", False)]
    assert [(c.title, c.new) for c in state.user] == [("Mine", True)]
    # Each untrusted card is marked itself, not only by the section note; the user's are not.
    assert [c.untrusted for c in state.project] == [True]
    assert [c.untrusted for c in state.user] == [False]


def _view(state: str, **kw: object) -> JobView:
    return JobView(id=f"job-{state}", state=state, excerpt="fix the login bug", **kw)  # type: ignore[arg-type]


def test_job_lines_name_each_state_compactly_and_failed_jobs_are_flagged() -> None:
    now = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)
    lines = {
        s: job_line(_view(s, **kw), now=now)
        for s, kw in [
            ("queued", {}),
            ("extracting", {}),
            ("applying", {}),
            ("retrying", {"attempt": 2, "max_attempts": 3, "next_try_at": "2026-11-30T12:00:04Z"}),
            ("failed", {"reason": "extraction request failed: 401"}),
            ("held", {}),
            ("damaged", {"reason": "not JSON"}),
        ]
    }
    assert lines["queued"].line == "queued · fix the login bug"
    assert lines["extracting"].line == "extracting · fix the login bug"
    assert lines["applying"].line == "applying · fix the login bug"
    assert lines["retrying"].line == "retrying 2/3 in 4s · fix the login bug"
    assert lines["failed"].line == "failed: extraction request failed: 401"
    assert lines["held"].line == "held for review · fix the login bug"
    assert lines["damaged"].line == "damaged job file: not JSON"
    assert [s for s, j in lines.items() if j.failed] == ["failed", "damaged"]
    assert lines["extracting"].job_id == "job-extracting"


def test_job_lines_strip_terminal_escapes_from_the_excerpt_and_reason(tmp_path: Path) -> None:
    hostile = JobView(id="j", state="failed", reason="boom \x1b[2J\x1b]0;pwned\x07 done", excerpt="x")
    line = job_line(hostile).line
    assert "\x1b" not in line and "\x07" not in line and line.startswith("failed: boom")
    stores = make_env(tmp_path)
    state = build_panel_state(index_view(stores), [hostile, _view("extracting")], None)
    assert [j.job_id for j in state.jobs] == ["j", "job-extracting"]

"""The panel snapshot: the last panel state's cards, shown at the next start only while
the stores' stat stamp (both folders, the trust record) is what it was built from."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from app.services.index import index_view
from app.services.panel_snapshot import compute_stamp, snapshot_path
from app.tui.panel.snapshot import MAX_CARDS, PanelSnapshot, read_snapshot
from app.tui.panel.state import UNTRUSTED_NOTE, build_panel_state
from memory.constants import Level
from memory.store.fs import FS
from memory.store.paths import PROJECT_STORE_REL
from memory.store.stores import MemoryStores
from tests.support.memtools import trust_workspace, two_card_workspace, write_note
from widgets.panel.memory_panel import PanelState

ESC = "\x1b"


def settle(ws: Path, home: Path, seconds: int = 30) -> None:
    """Every file the stamp reads that changed in the racy window is dated ``seconds`` further
    back, as a store is on a real start (a test's files are all brand new). Files settled before
    keep their dates: settling again changes no stamp by itself."""
    racy = time.time_ns() - 10 * 1_000_000_000
    paths = [Path(os.path.realpath(ws)) / ".git" / "pseudoclaude-id"]
    for folder in (Path(os.path.realpath(ws)) / PROJECT_STORE_REL, home / "memory", home / "trust"):
        if folder.is_dir():
            # The folder too: a folder changed in the racy window is not stamped at all.
            paths += [folder, *(folder / n for n in os.listdir(folder))]
    for p in paths:
        if os.path.lexists(p) and (st := os.lstat(p)).st_mtime_ns > racy:
            t = st.st_mtime_ns - seconds * 1_000_000_000
            os.utime(p, ns=(t, t), follow_symlinks=False)


def _ws(tmp_path: Path, home: Path, *, trusted: bool = True) -> tuple[Path, MemoryStores]:
    ws, stores = two_card_workspace(tmp_path, trusted=trusted)
    settle(ws, home)
    return ws, stores


def _record(home: Path, ws: Path, stores: MemoryStores) -> PanelState:
    return PanelSnapshot(home, ws).record(lambda: build_panel_state(index_view(stores), [], None))


@pytest.mark.parametrize("trusted", [True, False])
def test_a_recorded_state_reads_back_while_nothing_changed(
    tmp_path: Path, isolated_home: Path, trusted: bool
) -> None:
    ws, stores = _ws(tmp_path, isolated_home, trusted=trusted)
    state = _record(isolated_home, ws, stores)
    path = snapshot_path(isolated_home, ws)
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_snapshot(None, ws) == state  # $PSEUDOCLAUDE_HOME by default
    # The untrusted marking as the state had it: never shown as trusted.
    assert state.project_note == (None if trusted else UNTRUSTED_NOTE)
    assert all(c.untrusted is not trusted for c in state.project) and state.project


def test_new_marks_jobs_and_the_sync_line_are_not_kept(tmp_path: Path, isolated_home: Path) -> None:
    ws, stores = _ws(tmp_path, isolated_home)
    base = build_panel_state(index_view(stores), [], frozenset())  # every card new
    assert all(c.new for c in base.user)
    PanelSnapshot(isolated_home, ws).record(lambda: replace(base, sync_note="synced", sync_failed=True))
    got = read_snapshot(isolated_home, ws)
    assert got is not None and got.jobs == () and got.sync_note is None and not got.sync_failed
    assert [c.title for c in got.user] == ["Tabs not spaces"] and not any(c.new for c in got.user)


@pytest.mark.parametrize(
    "change", ["edit", "add", "delete_user", "trust_record", "trust_removed", "untrusted_then_trusted"]
)
def test_any_change_to_what_the_cards_came_from_hides_the_snapshot(
    tmp_path: Path, isolated_home: Path, change: str
) -> None:
    ws, stores = _ws(tmp_path, isolated_home, trusted=change != "untrusted_then_trusted")
    _record(isolated_home, ws, stores)
    assert read_snapshot(isolated_home, ws) is not None
    project = ws / PROJECT_STORE_REL
    if change == "edit":
        card = project / "project_knowledge_deploy.md"
        card.write_text(card.read_text().replace("Deploy on Fridays", "Deploy on Mondays"))
    elif change == "add":
        write_note(stores, Level.PROJECT, "project_knowledge_ci.md", "CI runs nightly", "ci")
    elif change == "delete_user":
        (isolated_home / "memory" / "project_knowledge_tabs.md").unlink()
    elif change == "trust_record":
        (record,) = (isolated_home / "trust").iterdir()
        record.write_text(record.read_text() + " ")
    elif change == "trust_removed":
        for record in (isolated_home / "trust").iterdir():
            record.unlink()
    else:
        trust_workspace(ws)
    settle(ws, isolated_home)  # not the racy window: the stamps themselves differ
    assert read_snapshot(isolated_home, ws) is None


def test_a_racy_state_is_neither_written_nor_shown(tmp_path: Path, isolated_home: Path) -> None:
    ws, stores = _ws(tmp_path, isolated_home)
    write_note(stores, Level.USER, "project_knowledge_uv.md", "Use uv", "not pip")  # just now
    assert compute_stamp(FS(), isolated_home, ws) is None
    _record(isolated_home, ws, stores)
    assert not snapshot_path(isolated_home, ws).exists()
    settle(ws, isolated_home)
    _record(isolated_home, ws, stores)
    assert read_snapshot(isolated_home, ws) is not None
    # Touched within the racy window with the same stat key otherwise: not trusted.
    card = isolated_home / "memory" / "project_knowledge_uv.md"
    st = card.stat()
    os.utime(card, ns=(st.st_atime_ns, time.time_ns()))
    assert read_snapshot(isolated_home, ws) is None


def test_the_snapshot_is_rewritten_when_the_state_changes_and_only_then(
    tmp_path: Path, isolated_home: Path
) -> None:
    ws, stores = _ws(tmp_path, isolated_home)
    writer = PanelSnapshot(isolated_home, ws)
    writer.record(lambda: build_panel_state(index_view(stores), [], None))
    path = snapshot_path(isolated_home, ws)
    first = path.stat()
    writer.record(lambda: build_panel_state(index_view(stores), [], None))
    assert path.stat().st_ino == first.st_ino  # the same state: not written again
    write_note(stores, Level.USER, "project_knowledge_uv.md", "Use uv", "not pip")
    settle(ws, isolated_home)
    writer.record(lambda: build_panel_state(index_view(stores), [], None))
    got = read_snapshot(isolated_home, ws)
    assert got is not None and sorted(c.title for c in got.user) == ["Tabs not spaces", "Use uv"]


def test_the_cards_kept_are_capped(tmp_path: Path, isolated_home: Path) -> None:
    ws, stores = _ws(tmp_path, isolated_home)
    base = build_panel_state(index_view(stores), [], None)
    many = replace(base, user=base.user * (MAX_CARDS + 50))
    PanelSnapshot(isolated_home, ws).record(lambda: many)
    got = read_snapshot(isolated_home, ws)
    assert got is not None and len(got.user) == MAX_CARDS


def _body(home: Path, ws: Path) -> dict[str, object]:
    return json.loads(snapshot_path(home, ws).read_bytes())


@pytest.mark.parametrize(
    "hostile",
    [
        b"{not json",
        b"[]",
        b"null",
        b'"x"',
        b"\xff\xfe",
        b"[" * 100_000,
        b" " * (2 << 20),
        "version",
        "workspace",
        "stamp",
        "card_not_dict",
        "title_int",
        "untrusted_str",
        "too_many",
        "long_title",
        "missing_field",
        "note_list",
    ],
)
def test_a_hostile_snapshot_shows_nothing_and_never_raises(
    tmp_path: Path, isolated_home: Path, hostile: bytes | str
) -> None:
    ws, stores = _ws(tmp_path, isolated_home)
    _record(isolated_home, ws, stores)
    path = snapshot_path(isolated_home, ws)
    if isinstance(hostile, bytes):
        path.write_bytes(hostile)
    else:
        body = _body(isolated_home, ws)
        card = body["user"][0]  # type: ignore[index]
        if hostile == "version":
            body["version"] = 99
        elif hostile == "workspace":
            body["workspace"] = "/elsewhere"
        elif hostile == "stamp":
            body["stamp"] = {"project": "x", "user": "y", "trust": "z"}
        elif hostile == "card_not_dict":
            body["user"] = ["a card"]
        elif hostile == "title_int":
            card["title"] = 7
        elif hostile == "untrusted_str":
            card["untrusted"] = "no"
        elif hostile == "too_many":
            body["user"] = [card] * (MAX_CARDS + 1)
        elif hostile == "long_title":
            card["title"] = "x" * 100_000
        elif hostile == "missing_field":
            del card["summary"]
        else:
            body["cut_note"] = ["a", "list"]
        path.write_text(json.dumps(body))
    assert read_snapshot(isolated_home, ws) is None


def test_terminal_escapes_in_a_snapshot_are_stripped(tmp_path: Path, isolated_home: Path) -> None:
    ws, stores = _ws(tmp_path, isolated_home)
    _record(isolated_home, ws, stores)
    body = _body(isolated_home, ws)
    body["user"][0]["title"] = f"Tabs{ESC}]52;c;aGk={ESC}\\ not spaces{ESC}[2J"  # type: ignore[index]
    body["cut_note"] = f"{ESC}[31mcut"
    snapshot_path(isolated_home, ws).write_text(json.dumps(body))
    got = read_snapshot(isolated_home, ws)
    assert got is not None and ESC not in got.user[0].title and "Tabs" in got.user[0].title
    assert got.cut_note is not None and ESC not in got.cut_note


def test_a_worktrees_git_file_is_not_stamped(tmp_path: Path, isolated_home: Path) -> None:
    ws, _ = _ws(tmp_path, isolated_home)
    shutil.rmtree(ws / ".git")
    (ws / ".git").write_text("gitdir: /somewhere/else\n")
    assert compute_stamp(FS(), isolated_home, ws) is None


def test_reading_imports_no_pydantic_memory_model_or_yaml(tmp_path: Path, isolated_home: Path) -> None:
    ws, stores = _ws(tmp_path, isolated_home)
    _record(isolated_home, ws, stores)
    code = (
        "import sys\n"
        "from app.tui.panel.snapshot import read_snapshot\n"
        f"state = read_snapshot(None, {str(ws)!r})\n"
        "assert state is not None and state.user, state\n"
        "print(sorted(m for m in ('pydantic', 'memory.model', 'yaml') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_a_build_right_after_a_batch_stamps_no_card(tmp_path: Path, isolated_home: Path) -> None:
    # A batch has just committed (its folder changed within the racy window): the stamp could not
    # be trusted anyway, so no card is stat'ed for it (at 10,000 cards, a tenth of a second).
    ws, stores = _ws(tmp_path, isolated_home)
    card = write_note(stores, Level.USER, "fresh.md", "Fresh", "A card written a moment ago.")
    os.utime(card, ns=(1, 1))  # the card itself looks old: only its folder changed just now

    class Counting(FS):
        lstats = 0

        def lstat(self, path: object) -> os.stat_result:
            Counting.lstats += 1
            return super().lstat(path)  # type: ignore[arg-type]

    snap = PanelSnapshot(isolated_home, ws, fs=Counting())
    snap.record(lambda: build_panel_state(index_view(stores), [], None))
    assert Counting.lstats <= 2  # the two folders, no card
    assert not snapshot_path(isolated_home, ws).exists()
    settle(ws, isolated_home)
    snap.record(lambda: build_panel_state(index_view(stores), [], None))
    assert read_snapshot(isolated_home, ws) is not None  # a later build, once settled, is kept


def test_a_build_refused_for_fresh_stores_asks_to_be_tried_again_once_they_can_be_stamped(
    tmp_path: Path, isolated_home: Path
) -> None:
    ws, stores = _ws(tmp_path, isolated_home)
    recorder = PanelSnapshot(isolated_home, ws)
    write_note(stores, Level.USER, "project_knowledge_uv.md", "Use uv", "not pip")  # just now
    recorder.record(lambda: build_panel_state(index_view(stores), [], None))
    wait = recorder.retry_in()
    assert wait is not None and 2.0 <= wait <= 2.2  # the racy window and a margin
    settle(ws, isolated_home)  # as the window passing would
    recorder.record(lambda: build_panel_state(index_view(stores), [], None))
    assert recorder.retry_in() is None and read_snapshot(isolated_home, ws) is not None

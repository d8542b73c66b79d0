"""Sharing through git in the running app, with real git and local repositories:
a ``git pull`` that brings a card shows it in the panel with its author within 5 s and hands it
to the next request's ``<memory-update>``; a card conflicted by a merge is listed as conflicted
and reaches no request; ``MEMORY.md`` is rebuilt from the cards after an outside change; the user
store syncs with ``user_memory_remote`` after start-up (a fake sync where the remote is not the
point, a real bare remote once), failures are one line retried later, never two syncs at once,
and the sync at quit is bounded."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Static

from app.tui.flows import sharing_flow as sync_flow
from app.tui.messages import MemoryEventMessage
from memory.constants import Level
from memory.events import JobApplied
from memory.model import Action, AppliedOp
from memory.sharing.sync import SyncResult, sync_user_store
from memory.store.store import StoreError
from memory.store.stores import MemoryStores
from tests.support.fakeapi import FakeAnthropic, text
from tests.support.gittools import alive, clone, commit_all, git, git_run, hanging_ssh, new_repo, started
from tests.support.memtools import create, trust_workspace, write_note
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from tests.tui.test_app_card_screens import open_cards
from widgets.cards.resolve import ResolveModal

pytestmark = pytest.mark.timeout(120)

SIZE = (120, 40)
DEPLOY = "project_knowledge_deploy.md"


def _shared(tmp_path: Path) -> tuple[Path, Path]:
    """Clone A (Ann) with one committed project card, and clone B (Bea) of it; both trusted."""
    a = new_repo(tmp_path / "a", "Ann")
    trust_workspace(a)
    stores = MemoryStores(a.resolve())
    res = stores.apply(
        [(0, create("project", "Build command", "make build", summary="run make build"))], source="test"
    )
    assert not res.rejected and not res.conflicts
    commit_all(a, "a card")
    b = clone(a, tmp_path / "b", "Bea")
    trust_workspace(b)
    return a.resolve(), b.resolve()


def _add(workspace: Path, title: str, summary: str) -> None:
    res = MemoryStores(workspace).apply(
        [(0, create("project", title, f"{title}: {summary}", summary=summary))], source="test"
    )
    assert not res.rejected and not res.conflicts, res


def panel_text(app: Any) -> str:
    return app.panel._cards.render().plain.replace("\xa0", " ")


def request_text(server: FakeAnthropic) -> str:
    """Everything the last request to the main model sent: system prompt and messages."""
    body = server.requests_for(MODEL)[-1].body
    return json.dumps({"system": body.get("system"), "messages": body["messages"]}, ensure_ascii=False)


# -- outside changes ------------------------------------------------------------------------------


async def test_a_git_pull_shows_the_card_with_its_author_within_5s_and_the_next_request_gets_it(
    make_app, server: FakeAnthropic, tmp_path: Path
) -> None:
    a, b = _shared(tmp_path)
    _add(b, "Deploy", "ship with make deploy")  # written by Bea: author from B's user.name
    commit_all(b, "Bea's card")
    assert "author: Bea" in (b / ".PseudoClaude" / "memory" / DEPLOY).read_text()
    server.script(MODEL, text("Noted."))
    app = make_app(server, workspace=a, memory_mode="off")
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: [c.title for c in app.panel.state.project] == ["Build command"])
        await wait_until(pilot, lambda: app.bridge.watcher_ready, what="the store watcher")
        await asyncio.to_thread(git, a, "pull", "-q", "--no-rebase", "--no-edit", str(b), "main")

        def shown() -> bool:
            return any(c.filename == DEPLOY and c.author == "Bea" for c in app.panel.state.project)

        await wait_until(pilot, shown, timeout=5, what="the pulled card with its author in the panel")
        await wait_until(pilot, lambda: "by Bea · ship with" in panel_text(app), timeout=5)
        # Ann's own card says no name.
        assert [c.author for c in app.panel.state.project if c.title == "Build command"] == [""]

        await send(pilot, "what changed?")
        await wait_until(pilot, lambda: "Noted." in chat_texts(app), what="the answer")
        first = server.requests_for(MODEL)[-1].body["messages"][-1]["content"][0]["text"]
        assert first.startswith("<memory-update>"), first
        assert f"({DEPLOY})" in first and "ship with make deploy" in first


async def test_an_outside_change_has_memory_md_rebuilt_from_the_cards(make_app, tmp_path: Path) -> None:
    a, _ = _shared(tmp_path)
    index = a / ".PseudoClaude" / "memory" / "MEMORY.md"
    app = make_app(workspace=a)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: app.bridge.watcher_ready, what="the store watcher")
        assert "project_knowledge_by-hand.md" not in index.read_text()
        # An editor (or a checkout) writes a card and leaves the derived index as it was.
        write_note(
            MemoryStores(a), Level.PROJECT, "project_knowledge_by-hand.md", "By hand", "written by hand"
        )
        await wait_until(
            pilot,
            lambda: "project_knowledge_by-hand.md" in index.read_text(),
            timeout=5,
            what="MEMORY.md rebuilt with the new card",
        )
        await wait_until(pilot, lambda: "By hand" in [c.title for c in app.panel.state.project])
        assert app.memory.sharing.refreshes >= 1


async def test_an_index_that_cannot_be_refreshed_is_logged_and_the_panel_still_follows(
    make_app, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _ = _shared(tmp_path)
    app = make_app(workspace=a)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: app.bridge.watcher_ready, what="the store watcher")

        def broken(timeout: float = 0.0) -> list[Level]:
            raise StoreError("project store: MEMORY.md is a symlink")

        monkeypatch.setattr(app.bridge.stores, "refresh_indexes", broken)
        write_note(
            MemoryStores(a), Level.PROJECT, "project_knowledge_by-hand.md", "By hand", "written by hand"
        )
        await wait_until(pilot, lambda: "By hand" in [c.title for c in app.panel.state.project], timeout=5)
        assert not any("failed" in t for t in chat_texts(app))


async def test_a_card_conflicted_by_a_merge_is_listed_as_conflicted_and_reaches_no_request(
    make_app, server: FakeAnthropic, tmp_path: Path
) -> None:
    a, b = _shared(tmp_path)
    _add(b, "Deploy", "theirs: deploy from the tag")
    commit_all(b, "Bea's deploy card")
    server.script(MODEL, text("Noted."))
    app = make_app(server, workspace=a, memory_mode="off")
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: app.bridge.watcher_ready, what="the store watcher")
        # Ann writes a card of the same name on her side, commits, and merges Bea's branch.
        await asyncio.to_thread(_add, a, "Deploy", "ours: deploy from main")
        commit_all(a, "Ann's deploy card")
        merged = await asyncio.to_thread(git_run, a, "pull", "--no-rebase", "--no-edit", str(b), "main")
        assert merged.returncode != 0 and DEPLOY in merged.stdout + merged.stderr  # the card conflicts
        assert "<<<<<<<" in (a / ".PseudoClaude" / "memory" / DEPLOY).read_text()

        def conflicted() -> bool:
            return [(c.level, c.filename) for c in app.panel.state.conflicted] == [("project", DEPLOY)]

        await wait_until(pilot, conflicted, timeout=5, what="the conflicted card in the panel")
        assert DEPLOY not in [c.filename for c in app.panel.state.project]
        await wait_until(
            pilot,
            lambda: "⚠ Conflicted 1" in panel_text(app) and "changed on two branches" in panel_text(app),
        )

        await send(pilot, "what do you know about deploying?")
        await wait_until(pilot, lambda: "Noted." in chat_texts(app), what="the answer")
        sent = request_text(server)
        for never in ("<<<<<<<", ">>>>>>>", "ours: deploy from main", "theirs: deploy from the tag", DEPLOY):
            assert never not in sent, never
        assert "Build command" in sent  # the rest of the index is there


async def test_clicking_a_conflicted_card_in_the_panel_opens_the_browser_on_it(
    make_app, tmp_path: Path
) -> None:
    a, _ = _shared(tmp_path)
    path = a / ".PseudoClaude" / "memory" / DEPLOY
    path.write_text(
        "---\n<<<<<<< HEAD\ntitle: Deploy\n=======\ntitle: Deploy it\n>>>>>>> theirs\n"
        "type: project_knowledge\nsummary: s\ncreated: 2026-01-01T00:00:00Z\n"
        "updated: 2026-01-01T00:00:00Z\nsource: model\n---\nbody\n"
    )
    app = make_app(workspace=a)
    opened: list[tuple[str, str] | None] = []
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: len(app.panel.state.conflicted) == 1, what="the conflicted card")
        app.memory.screens.open_browser = opened.append  # what the panel asks for
        cards = app.panel._cards
        y = next(i for i in range(60) if cards.card_at(i) == ("project", DEPLOY))
        await pilot.click(cards, offset=(2, y))
        await wait_until(
            pilot, lambda: opened == [("project", DEPLOY)], what="the browser asked for the card"
        )
        # Enter on the focused card list: the first conflicted card as well.
        app.panel.query_one("_CardScroll").focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: opened[-1:] == [("project", DEPLOY)] and len(opened) == 2)


# -- the user store's sync -------------------------------------------------------------------------


class FakeSync:
    """``sync_user_store`` for tests: records each call, answers from ``results`` (the last one
    repeats), optionally waits on ``gate`` (a sync that hangs), and counts syncs running at once."""

    def __init__(self, app: Any, *results: SyncResult, gate: threading.Event | None = None) -> None:
        self.app = app
        self.results = list(results) or [SyncResult(ok=True, line="memory sync: in step")]
        self.gate = gate
        self.calls: list[dict[str, Any]] = []
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    def __call__(
        self, stores: MemoryStores, remote: str, *, timeout: float, cancel: Any = None
    ) -> SyncResult:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
            n = len(self.calls)
            rt = self.app.bridge.runtime
            self.calls.append(
                {
                    "remote": remote,
                    "timeout": timeout,
                    "opened": self.app.state.phase.opened,
                    "session_open": rt is not None and rt.session is not None,
                }
            )
        try:
            if self.gate is not None:
                self.gate.wait(30)
            return self.results[min(n, len(self.results) - 1)]
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def remote_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    remote = str(tmp_path / "remote.git")
    monkeypatch.setenv("PSEUDOCLAUDE_USER_MEMORY_REMOTE", remote)
    return remote


async def test_the_app_syncs_the_user_store_once_after_start_up_and_says_so_quietly(
    make_app, server: FakeAnthropic, remote_set: str
) -> None:
    app = make_app(server)
    fake = app.bridge.sync_user_store = FakeSync(
        app, SyncResult(ok=True, line="memory sync: in step (1 pulled)")
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: app.panel.state.sync_note == "memory sync: in step (1 pulled)")
        assert not app.panel.state.sync_failed
        [call] = fake.calls
        assert call["remote"] == remote_set and call["opened"]  # after RuntimeReady: the session is open
        assert "memory sync: in step (1 pulled)" in panel_text(app)


async def test_without_a_remote_the_app_never_syncs(make_app, server: FakeAnthropic) -> None:
    app = make_app(server)
    fake = app.bridge.sync_user_store = FakeSync(app)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running, timeout=15, what="the app to quit")
    assert fake.calls == [] and app.panel.state.sync_note is None


async def test_a_failed_sync_is_one_line_replaced_by_the_next_and_retried_later(
    make_app, remote_set: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sync_flow, "RETRY_S", 0.2)
    app = make_app()
    fake = app.bridge.sync_user_store = FakeSync(
        app,
        SyncResult(ok=False, line="memory sync: cannot reach the remote (first)"),
        SyncResult(ok=False, line="memory sync: push rejected (second)"),
        SyncResult(ok=True, line="memory sync: in step"),
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(
            pilot,
            lambda: (
                len(fake.calls) >= 2 and app.panel.state.sync_note == "memory sync: push rejected (second)"
            ),
            what="the retry's line",
        )
        text_now = panel_text(app)
        assert "(first)" not in text_now and text_now.count("memory sync:") == 1
        assert app.panel.state.sync_failed
        await wait_until(
            pilot, lambda: app.panel.state.sync_note == "memory sync: in step", what="the third sync"
        )
        assert not app.panel.state.sync_failed
        n = len(fake.calls)
        assert n == 3
        # In step: no more retries (the next sync is at quit).
        assert app.memory.sharing._retry is None and fake.most == 1


async def test_a_batch_applied_to_the_user_store_retries_a_failed_sync_and_syncs_never_overlap(
    make_app, remote_set: str
) -> None:
    app = make_app()
    gate = threading.Event()
    fake = app.bridge.sync_user_store = FakeSync(
        app, SyncResult(ok=False, line="memory sync: offline"), gate=gate
    )
    user_batch = JobApplied(
        job_id="j1",
        applied=(
            AppliedOp(index=0, action=Action.CREATE, level=Level.USER, filename="user_preference_x.md"),
        ),
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_ready(pilot)
            await wait_until(pilot, lambda: len(fake.calls) == 1, what="the first sync (held)")
            assert not app.memory.sharing.sync_now()  # one runs: no second one beside it
            gate.set()
            await wait_until(pilot, lambda: app.memory.sharing.syncs == 1, what="the first sync's end")
            assert app.memory.sharing.last is not None and not app.memory.sharing.last.ok
            app.post_message(MemoryEventMessage(user_batch))
            await wait_until(
                pilot, lambda: app.memory.sharing.syncs == 2, what="the retry after the user batch"
            )
            assert len(fake.calls) == 2 and fake.most == 1
    finally:
        gate.set()


async def test_the_sync_at_quit_comes_after_the_drain_and_a_hanging_one_is_cut_off(
    make_app, remote_set: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sync_flow, "QUIT_SYNC_S", 0.5)
    app = make_app()
    gate = threading.Event()
    fake = app.bridge.sync_user_store = FakeSync(app, SyncResult(ok=True, line="memory sync: in step"))
    said: list[Any] = []
    exit_ = app.exit
    app.exit = lambda *a, **k: (said.append(k.get("message")), exit_(*a, **k))[1]
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_ready(pilot)
            await wait_until(pilot, lambda: app.memory.sharing.syncs == 1, what="the start-up sync")
            fake.gate = gate  # the remote stops answering
            await pilot.press("ctrl+q")
            await wait_until(pilot, lambda: not app.is_running, timeout=10, what="the app to quit anyway")
        assert len(fake.calls) == 2
        assert fake.calls[1]["session_open"] is False  # after the drain and the close
        assert fake.calls[1]["timeout"] == 0.5
        [message] = [m for m in said if m is not None]
        assert "user store not synced at quit" in str(message)
    finally:
        gate.set()


async def test_the_app_syncs_the_user_store_with_a_real_bare_remote(
    make_app, server: FakeAnthropic, remote_set: str, ws: Path
) -> None:
    subprocess.run(
        ["git", "init", "-q", "--bare", "-b", "main", remote_set],
        check=True,
        env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"},
    )
    stores = MemoryStores(ws.resolve())
    write_note(stores, Level.USER, "user_preference_tabs.md", "Tabs", "indent with tabs", summary="tabs")
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: app.memory.sharing.syncs == 1, timeout=30, what="the sync")
        assert app.memory.sharing.last is not None and app.memory.sharing.last.ok, app.memory.sharing.last
        line = app.memory.sharing.last.line
        # The panel follows in a worker of its own: wait for it, not for a count of pauses.
        await wait_until(pilot, lambda: app.panel.state.sync_note == line, what="the sync line in the panel")
        assert not app.panel.state.sync_failed
    tree = git(Path(remote_set), "ls-tree", "-r", "--name-only", "main")
    assert "user_preference_tabs.md" in tree.split()


def _bare(path: str) -> None:
    subprocess.run(
        ["git", "init", "-q", "--bare", "-b", "main", path],
        check=True,
        env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"},
    )


def _synced(stores: MemoryStores, remote: str) -> None:
    result = sync_user_store(stores, remote)
    assert result.ok, result.line


async def test_a_rewritten_remote_is_refused_in_one_line_in_the_panel_and_nothing_here_changes(
    make_app, remote_set: str, ws: Path, tmp_path: Path
) -> None:
    _bare(remote_set)
    stores = MemoryStores(ws.resolve())
    card = write_note(stores, Level.USER, "user_preference_editor.md", "Editor", "Uses vim.\n", summary="vim")
    write_note(stores, Level.USER, "user_preference_shell.md", "Shell", "Uses zsh.\n", summary="zsh")
    _synced(stores, remote_set)
    write_note(stores, Level.USER, "user_preference_shell.md", "Shell", "Uses zsh 5.\n", summary="zsh")
    _synced(stores, remote_set)
    # Another machine resets the remote (no card lost), changes the editor card, force-pushes.
    other = clone(Path(remote_set), tmp_path / "other", "Mallory")
    git(other, "reset", "-q", "--hard", "HEAD~1")
    (other / card.name).write_text((other / card.name).read_text().replace("Uses vim.", "Uses nano."))
    commit_all(other, "rewritten")
    git(other, "push", "-q", "--force", "origin", "main")
    before = card.read_bytes()
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: app.memory.sharing.syncs == 1, timeout=30, what="the sync")
        last = app.memory.sharing.last
        assert last is not None and not last.ok and "\n" not in last.line
        assert (
            "history was rewritten" in last.line
            and card.name in last.line
            and "--accept-rewrite" in last.line
        )
        await wait_until(
            pilot,
            lambda: app.panel.state.sync_note == last.line and app.panel.state.sync_failed,
            what="the refusal in the panel",
        )
        assert "memory sync: refused" in panel_text(app)
    assert card.read_bytes() == before


async def test_a_sync_conflict_names_this_machine_and_the_remote_and_m_keeps_this_machines(
    make_app, ws: Path, tmp_path: Path
) -> None:
    remote = str(tmp_path / "remote.git")
    _bare(remote)
    here = MemoryStores(ws.resolve())  # this machine: the app's home
    there = MemoryStores(ws.resolve(), tmp_path / "other-home")
    for stores in (there, here):
        stores.user.dir.mkdir(parents=True, exist_ok=True)
    card = write_note(there, Level.USER, "user_preference_editor.md", "Editor", "Uses vim.\n", summary="vim")
    _synced(there, remote)
    _synced(here, remote)
    write_note(there, Level.USER, card.name, "Editor", "Uses emacs, on the other machine.\n", summary="vim")
    _synced(there, remote)
    mine = write_note(here, Level.USER, card.name, "Editor", "Uses helix, on this machine.\n", summary="vim")
    result = sync_user_store(here, remote)
    assert not result.ok and result.conflicted == (card.name,), result.line
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 1)
        browser.select("user", card.name)
        await wait_until(
            pilot, lambda: browser.selected is not None and browser.selected.conflict is not None
        )
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ResolveModal), what="the resolution view")
        modal = app.screen
        assert isinstance(modal, ResolveModal)
        titles = [str(modal.query_one(f"#{pane}").border_title) for pane in ("ours-pane", "theirs-pane")]
        assert titles[0].startswith("this machine") and titles[1].startswith("the remote · "), titles
        assert "helix" in str(modal.query_one("#ours-pane-text", Static).content)
        assert "emacs" in str(modal.query_one("#theirs-pane-text", Static).content)
        buttons = [str(b.label) for b in modal.query(Button)]
        assert "Take this machine's [m]" in buttons and "Take the remote's [r]" in buttons
        assert not any("ours" in b or "theirs" in b for b in buttons), buttons
        await pilot.press("m")
        await wait_until(pilot, lambda: "<<<<<<<" not in mine.read_text(), what="the card resolved")
        await wait_until(pilot, lambda: "took this machine's" in browser.flash_text, what="the outcome")
    note = MemoryStores(ws.resolve()).read_note("user", card.name)
    assert note.conflict is None and note.body == "Uses helix, on this machine.\n"


async def test_ctrl_q_with_a_remote_that_hangs_leaves_within_the_bound_and_leaves_no_ssh_behind(
    make_app, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pids = hanging_ssh(tmp_path, monkeypatch)
    monkeypatch.setenv(
        "PSEUDOCLAUDE_USER_MEMORY_REMOTE", "ssh://nohost.invalid/x.git"
    )  # no network: the script
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: len(started(pids)) == 2, timeout=30, what="the start-up sync's ssh")
        t0 = time.monotonic()
        await pilot.press("ctrl+q")
        await wait_until(
            pilot, lambda: not app.is_running, timeout=sync_flow.QUIT_SYNC_S + 10, what="the app to quit"
        )
        took = time.monotonic() - t0
    # The bound, and the drain and the close of an app with nothing to drain.
    assert took < sync_flow.QUIT_SYNC_S + 2.5 <= 7.5, took
    ssh = started(pids)
    deadline = time.monotonic() + 5
    while any(alive(p) for p in ssh) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert [p for p in ssh if alive(p)] == []

"""A clone whose project store holds 10,001 cards never freezes the app, and Ctrl+Q always quits.

The store is written once per module (tests/bench/bigstore.py: the files directly, as the app writes
them). "While the store loads" is made certain, not hoped for: an FS hook holds every read of a
card file by a background thread until the test lets it go, so the keys are typed while the panel
(and the session's index) are still being read.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from textual.widgets import Static

from app.tui.flows.quitter import QUIT_CLOSE_S, QUIT_DRAIN_S
from memory.model import NoteMeta
from memory.store.frontmatter import dump_note
from memory.store.fs import FS
from memory.store.stores import MemoryStores
from tests.bench.bigstore import STAMP, card_filename, make_big_store
from tests.support.clitools import create_op, ops_answer
from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MEMORY_MODEL, MODEL, chat_texts, send, wait_ready, wait_until
from tests.tui.test_app_memory import _spooled
from widgets.dialogs.trust_modal import TRUST_SHOWN, TrustModal

pytestmark = pytest.mark.timeout(240)

CARDS = 10_001
# After the first frame the trust window is up within this (generous on two busy cores; it took
# 32–39 s when the window mounted a widget per card).
ASK_WITHIN_S = 5.0
# Ctrl+Q ends the app after the drain and the close bounds; the slack is for a busy machine. A drain
# stuck on a thread used to be waited for 60 s, a held model request until it gave up.
QUIT_WITHIN_S = QUIT_DRAIN_S + QUIT_CLOSE_S + 8.0
SIZE = (120, 40)


@pytest.fixture(scope="module")
def big_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("big") / "repo"
    make_big_store(ws, CARDS)
    return ws.resolve()


class HeldCardReads:
    """An FS hook: while closed, a thread that lists, stats or reads a card of ``folder`` waits."""

    def __init__(self, folder: Path) -> None:
        self.prefix = f"{folder}/"
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self.waiting = 0

    def close(self) -> None:
        self._open.clear()

    def open(self) -> None:
        self._open.set()

    def __call__(self, op: str, path: str) -> None:
        if self._open.is_set() or not (path.startswith(self.prefix) and path.endswith(".md")):
            return
        with self._lock:
            self.waiting += 1
        self._open.wait(60)


class HeldStoreWrites:
    """An FS hook: once armed, every write into ``folder`` waits until released (a disk that hangs)."""

    READS = frozenset({"lstat", "read", "listdir"})

    def __init__(self, folder: Path) -> None:
        self.prefix = f"{folder}/"
        self.armed = False
        self._released = threading.Event()
        self.waiting = 0

    def release(self) -> None:
        self._released.set()

    def __call__(self, op: str, path: str) -> None:
        if self.armed and op not in self.READS and path.startswith(self.prefix):
            self.waiting += 1
            self._released.wait(60)


def _store(ws: Path) -> Path:
    return ws / ".PseudoClaude" / "memory"


def test_the_big_store_fixture_writes_cards_as_the_app_does(tmp_path: Path) -> None:
    store = make_big_store(tmp_path / "repo", 6)
    for i in range(6):
        name = card_filename(i)
        kind = name.split("_card-")[0]
        meta = NoteMeta(
            title=f"Card {i:05d} about module m{i % 97}",
            summary=f"How part {i} of the build works, in one line",
            type=kind,
            created=STAMP,
            updated=STAMP,
            source="manual",
        )
        body = f"Body of card {i}: run `make part-{i}` before the release.\n"
        assert (store / name).read_bytes() == dump_note(meta, body)
    preview = MemoryStores(tmp_path / "repo").trust_preview()
    assert len(preview.lines) == 6 and preview.left_out == []


async def test_an_untrusted_10001_card_store_asks_at_once_and_after_y_the_prompt_types_while_it_loads(
    make_app, server: FakeAnthropic, big_ws: Path
) -> None:
    held = HeldCardReads(_store(big_ws))
    app = make_app(server, workspace=big_ws, fs=FS(held), memory_mode="off")
    try:
        async with app.run_test(size=SIZE) as pilot:
            # run_test returns once the first frame is composed: the bound counts from there. Checked
            # after the wait too: a loop frozen while the window mounts would let wait_until see it late.
            first_frame = asyncio.get_running_loop().time()
            await wait_until(
                pilot,
                lambda: isinstance(app.screen, TrustModal) and app.screen.is_mounted,
                timeout=ASK_WITHIN_S,
                what="the trust window, within seconds of the first frame",
            )
            assert asyncio.get_running_loop().time() - first_frame <= ASK_WITHIN_S
            modal = app.screen
            assert isinstance(modal, TrustModal)
            await wait_until(pilot, lambda: modal.cards is not None, timeout=60, what="the cards listed")
            assert len(modal.cards or ()) == CARDS
            summary = str(modal.query_one("#summary", Static).content.plain)  # type: ignore[union-attr]
            listing = str(modal.query_one("#cards", Static).content.plain)  # type: ignore[union-attr]
            assert "Its 10,001 cards are not put into any prompt" in summary
            assert f"… and {CARDS - TRUST_SHOWN:,} more cards" in listing
            assert len(list(modal.query("*"))) < 12  # one list, not a widget per card
            held.close()  # from here on the store is "loading": every card read waits
            await pilot.press("y")
            await wait_until(
                pilot, lambda: not isinstance(app.screen, TrustModal), what="the window answered"
            )
            await wait_until(pilot, lambda: held.waiting > 0, timeout=30, what="a card read held")
            await pilot.press(*"hello")
            await wait_until(pilot, lambda: app.prompt.text == "hello", what="the typed keys in the prompt")

            def trusted_cards_shown() -> bool:
                return app.panel.state.project_note is None and bool(app.panel.state.project)

            assert not trusted_cards_shown()  # they are still being read
            held.open()
            await wait_until(pilot, trusted_cards_shown, timeout=60, what="the panel with the trusted cards")
            # Another refresh (the citations' re-check) can show the cards before the trust flow's
            # own note is drawn: the note is waited for, not assumed to come first.
            await wait_until(
                pilot,
                lambda: any("project memory trusted" in t for t in chat_texts(app)),
                timeout=30,
                what="the trust note in the chat",
            )
            await pilot.press("ctrl+q")
            await wait_until(pilot, lambda: not app.is_running, timeout=QUIT_WITHIN_S, what="Ctrl+Q to quit")
    finally:
        held.open()  # a failed check must not leave threads waiting (the loop's close joins them)


async def test_a_trusted_10001_card_store_asks_nothing_and_the_prompt_types_while_it_loads(
    make_app, server: FakeAnthropic, big_ws: Path
) -> None:
    MemoryStores(big_ws).trust_project()
    held = HeldCardReads(_store(big_ws))
    held.close()  # the store is "loading" from the first frame on
    app = make_app(server, workspace=big_ws, fs=FS(held), memory_mode="off")
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: held.waiting > 0, timeout=30, what="a card read held")
            await pilot.press(*"typed early")
            await wait_until(
                pilot, lambda: app.prompt.text == "typed early", what="the typed keys in the prompt"
            )
            assert not app.panel.state.project and not isinstance(app.screen, TrustModal)
            held.open()
            await wait_until(
                pilot, lambda: len(app.panel.state.project) > 0, timeout=60, what="the panel's cards"
            )
            assert not isinstance(app.screen, TrustModal)
            await pilot.press("ctrl+q")
            await wait_until(pilot, lambda: not app.is_running, timeout=QUIT_WITHIN_S, what="Ctrl+Q to quit")
    finally:
        held.open()


async def test_ctrl_q_with_the_memory_request_held_exits_after_the_drain_bound_and_keeps_the_job(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    held = server.gate("memory request held", timeout=120)
    server.script(MODEL, text("Answer."))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Kept for later", "body")), hold_before=held))
    app = make_app(server)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_ready(pilot)
            await send(pilot, "remember something")
            await wait_until(pilot, lambda: held.reached, timeout=30, what="the memory request")
            await pilot.press("ctrl+q")  # once: the drain waits, then gives up
            await wait_until(
                pilot, lambda: "saving 1 memory update" in app.status_model.info.note, what="the drain said"
            )
            await wait_until(pilot, lambda: not app.is_running, timeout=QUIT_WITHIN_S, what="Ctrl+Q to quit")
    finally:
        held.release()
    assert len(_spooled(ws)) == 1  # left for the next start


async def test_ctrl_q_with_a_memory_write_stuck_on_the_disk_exits_after_the_drain_bound(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    stuck = HeldStoreWrites(_store(ws))
    server.script(MODEL, text("Answer."))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Written later", "body"))))
    app = make_app(server, fs=FS(stuck))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_ready(pilot)
            stuck.armed = True
            await send(pilot, "remember something")
            await wait_until(pilot, lambda: stuck.waiting > 0, timeout=30, what="the job's write held")
            await pilot.press("ctrl+q")
            await wait_until(pilot, lambda: not app.is_running, timeout=QUIT_WITHIN_S, what="Ctrl+Q to quit")
    finally:
        stuck.release()
        # The close the app gave up on goes on in the background: it ends once the write is done.
        manager = app.bridge.runtime.manager
        deadline = asyncio.get_running_loop().time() + 60
        while not manager._closed and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)

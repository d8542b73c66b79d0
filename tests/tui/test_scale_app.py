"""Memory at scale in the app: the panel's "N cards not in the prompt", the card
browser's in/not-in-the-prompt filter and its filter box through the search index, pinning (a key
and the editor's box), the search caches following watched changes, ``/consolidate`` and the
automatic consolidation, and a consolidation job reviewed on the pending screen."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Checkbox

from app.tui.flows.scale_flow import NEEDS_MODEL
from app.tui.messages import MemoryEventMessage
from memory.constants import Level
from memory.events import JobApplied
from memory.store.stores import MemoryStores
from tests.support.fakeapi import FakeAnthropic, Gate, text
from tests.support.memtools import trust_workspace, write_note
from tests.tui.conftest import MEMORY_MODEL, MODEL, chat_texts, send, wait_ready, wait_until
from tests.tui.test_app_card_screens import open_cards, open_editor_on, replace_input, screen_lines, type_text
from tests.tui.test_app_pending_screen import flash_text, open_pending, select_row
from widgets.cards.browser import CardBrowser
from widgets.cards.editor import CardEditor

pytestmark = pytest.mark.timeout(180)

SIZE = (140, 40)


def seed_many(ws: Path, n: int, *, words: str = "") -> MemoryStores:
    """``n`` project cards written as files (fast), in a trusted store."""
    trust_workspace(ws)
    stores = MemoryStores(ws.resolve())
    for k in range(n):
        write_note(
            stores,
            Level.PROJECT,
            f"project_knowledge_fact-{k:05d}.md",
            f"Fact {k:05d}",
            f"Fact number {k} {words}".strip(),
            summary=f"about fact {k}",
        )
    return stores


# -- the panel ----------------------------------------------------------------------------------


async def test_the_panel_says_how_many_cards_are_not_in_the_prompt(make_app, ws: Path) -> None:
    stores = seed_many(ws, 320)
    left_out = len(stores.prompt_index().left_out)
    assert left_out > 100
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        expected = f"{left_out} cards not in the prompt"
        await wait_until(pilot, lambda: app.panel.state.cut_note == expected, what="the split in the panel")
        await wait_until(pilot, lambda: any(expected in line for line in screen_lines(app)), what="drawn")


async def test_the_panel_says_nothing_of_a_split_when_every_card_fits(make_app, ws: Path) -> None:
    seed_many(ws, 5)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: len(app.panel.state.project) == 5, what="the cards in the panel")
        assert app.panel.state.cut_note is None
        assert not any("not in the prompt" in line for line in screen_lines(app))


# -- the card browser ---------------------------------------------------------------------------


async def test_the_browser_filters_the_cards_in_and_not_in_the_prompt(make_app, ws: Path) -> None:
    stores = seed_many(ws, 320)
    split = stores.prompt_index()
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 320)
        header = lambda: str(browser.query_one("#cb-header").render())  # noqa: E731
        await wait_until(pilot, lambda: f"{len(split.left_out)} not in the prompt" in header())
        await pilot.press("i")
        await wait_until(pilot, lambda: browser.prompt_filter == "in")
        assert {f"{r.level}/{r.filename}" for r in browser.visible_rows} == split.shown
        assert f"{len(split.shown)} of 320" in header() and "in the prompt" in header()
        await pilot.press("i")
        await wait_until(pilot, lambda: browser.prompt_filter == "out")
        assert [f"{r.level}/{r.filename}" for r in browser.visible_rows] == list(split.left_out)
        assert f"{len(split.left_out)} of 320" in header() and "not in the prompt" in header()
        await pilot.press("i")
        await wait_until(pilot, lambda: len(browser.visible_rows) == 320, what="all again")


async def test_the_filter_box_goes_through_the_search_index_at_10000_cards(make_app, ws: Path) -> None:
    stores = seed_many(ws, 10_000)
    # "rob" starts a word of five cards; as a substring it is also inside five others.
    for k in range(5):
        write_note(
            stores, Level.PROJECT, f"project_knowledge_robot-{k}.md", f"Robotics {k}", "Robotics arm notes."
        )
        write_note(
            stores,
            Level.PROJECT,
            f"project_knowledge_frob-{k}.md",
            f"Frobnicate {k}",
            "Frobnicate the widget.",
        )
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 10_010, timeout=60)
        await pilot.press("slash")
        await type_text(pilot, "fact")  # the first query builds the cache (cold)
        await wait_until(
            pilot,
            lambda: browser.search is not None and browser.search[0] == "fact",
            60,
            what="the index's first answer",
        )
        box = browser.query_one("#cb-filter")
        box.value = ""  # type: ignore[attr-defined]
        started = time.monotonic()
        await type_text(pilot, "rob")
        await wait_until(
            pilot,
            lambda: browser.search is not None and browser.search[0] == "rob",
            10,
            what="the index's answer for 'rob'",
        )
        elapsed = time.monotonic() - started
        assert sorted(r.title for r in browser.visible_rows) == [f"Robotics {k}" for k in range(5)]
        assert elapsed < 5.0, elapsed  # warm: milliseconds; generous for a busy 2-core machine
        assert browser.last_filter_ms < 1000


async def test_p_pins_the_selected_card_and_u_undoes_it(make_app, ws: Path) -> None:
    stores = seed_many(ws, 3)
    path = stores.project.dir / "project_knowledge_fact-00001.md"
    before = path.read_bytes()
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 3)
        browser.select("project", path.name)
        await wait_until(
            pilot, lambda: browser.selected is not None and browser.selected.filename == path.name
        )
        await pilot.press("p")
        await wait_until(pilot, lambda: b"pinned: true" in path.read_bytes(), what="the card pinned")
        await wait_until(pilot, lambda: "pinned project card" in browser.flash_text, what="the notice")
        await wait_until(pilot, lambda: browser.selected is not None and browser.selected.pinned)
        assert any("pin Fact 00001" in line for line in screen_lines(app))
        await pilot.press("u")
        await wait_until(pilot, lambda: path.read_bytes() == before, what="the pin undone")


async def test_the_editors_pinned_box_is_saved_with_the_card(make_app, ws: Path) -> None:
    stores = seed_many(ws, 2)
    path = stores.project.dir / "project_knowledge_fact-00000.md"
    before = path.read_bytes()
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 2)
        editor = await open_editor_on(pilot, app, browser, "project", path.name)
        box = editor.query_one("#pinned", Checkbox)
        assert box.value is False
        box.focus()
        await wait_until(pilot, lambda: box.has_focus)
        await pilot.press("space")
        await wait_until(pilot, lambda: box.value is True and editor.dirty)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: not isinstance(app.screen, CardEditor), what="the editor closed")
        await wait_until(pilot, lambda: b"pinned: true" in path.read_bytes(), what="saved pinned")
        assert path.read_bytes().replace(b"pinned: true\n", b"") == before  # nothing else changed
        assert app.bridge.stores.history()[-1].label == f"{path.name} pinned by you"
        await wait_until(pilot, lambda: isinstance(app.screen, CardBrowser))
        await pilot.press("u")
        await wait_until(pilot, lambda: path.read_bytes() == before, what="the pin undone")


# -- the search caches follow watched changes --------------------------------------------------


async def test_a_watched_change_marks_the_search_caches_changed(make_app, ws: Path) -> None:
    stores = seed_many(ws, 2)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: app.bridge.watcher_ready, what="the watcher")
        search = app.bridge.require().search
        marked: list[object] = []
        original = search.mark_changed
        search.mark_changed = lambda level=None: (marked.append(level), original(level))  # type: ignore[method-assign]
        write_note(stores, Level.PROJECT, "project_knowledge_hand.md", "Quokka habitat", "Edited by hand.")
        await wait_until(pilot, lambda: marked, what="mark_changed after the watcher's event")
        hits = await asyncio.to_thread(search.search, "quokka")
        assert [h.filename for h in hits] == ["project_knowledge_hand.md"]


# -- consolidation -----------------------------------------------------------------------------

DUPS = {
    "project_knowledge_use-pnpm.md": (
        "Use pnpm, not npm",
        "This project uses pnpm for installs; npm breaks the lockfile.",
    ),
    "project_knowledge_pnpm.md": (
        "Package manager is pnpm",
        "Use pnpm install, never npm: npm breaks the pnpm lockfile.",
    ),
    "project_knowledge_pnpm-only.md": (
        "pnpm only",
        "The project installs with pnpm; npm would break the lockfile.",
    ),
}
UNRELATED = {
    f"project_knowledge_other{k}.md": (
        f"Topic {word}",
        f"The {word} subsystem keeps its {word} settings in {word}.toml.",
    )
    for k, word in enumerate(["frobnicator", "telemetry", "gazetteer", "kubelet", "quaternion", "harmonica"])
}
KEEP, GONE = "project_knowledge_use-pnpm.md", ["project_knowledge_pnpm.md", "project_knowledge_pnpm-only.md"]
MERGED = "The project installs with pnpm only (`pnpm install`); npm breaks the pnpm lockfile."


def seed_dups(ws: Path) -> MemoryStores:
    trust_workspace(ws)
    stores = MemoryStores(ws.resolve())
    for name, (title, body) in {**DUPS, **UNRELATED}.items():
        write_note(stores, Level.PROJECT, name, title, body, summary=title)
    return stores


def consolidation_answer() -> str:
    return json.dumps(
        [
            {"action": "update", "level": "project", "filename": KEEP, "content": MERGED},
            {"action": "delete", "level": "project", "filename": GONE[0]},
            {"action": "delete", "level": "project", "filename": GONE[1]},
        ]
    )


async def test_consolidate_without_a_model_says_it_needs_one(make_app, ws: Path) -> None:
    seed_dups(ws)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await send(pilot, "/consolidate")
        await wait_until(pilot, lambda: NEEDS_MODEL in chat_texts(app), what="the no-model note")
        await send(pilot, "/consolidate nowhere")
        await wait_until(pilot, lambda: "usage: /consolidate [project|user]" in chat_texts(app))


async def test_consolidate_queues_a_held_job_reviewed_op_by_op_with_a_diff_per_card(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    stores = seed_dups(ws)
    before = {name: (stores.project.dir / name).read_bytes() for name in DUPS}
    server.script(MEMORY_MODEL, text(consolidation_answer()))
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await send(pilot, "/consolidate project")
        said = lambda: [t for t in chat_texts(app) if t.startswith("consolidation job ")]  # noqa: E731
        await wait_until(pilot, said, what="the consolidation notice")
        assert said()[0].endswith(
            "queued: 1 cluster, 3 cards; its changes wait for your review (/pending)"
        ), said()
        await wait_until(
            pilot,
            lambda: any(j.line.startswith("held") for j in app.panel.state.jobs),
            what="the job held",
            timeout=30,
        )
        screen = await open_pending(pilot)
        await wait_until(
            pilot, lambda: any("Consolidation · project store · 1 cluster" in r for r in screen.row_texts())
        )
        await select_row(pilot, screen, lambda r: "Consolidation" in r, "the consolidation job")
        assert "consolidation: Consolidation · project store · 1 cluster, 3 cards" in screen.detail_text()
        await pilot.press("enter")
        await select_row(pilot, screen, lambda r: "[held] update" in r, "the held update")
        detail = screen.detail_text().splitlines()
        assert f"+{MERGED}" in detail and f"-{DUPS[KEEP][1]}" in detail, detail
        await select_row(
            pilot, screen, lambda r: "[held] delete" in r and "Package manager" in r, "a held delete"
        )
        assert "Would delete: moves to .trash/ (undo restores it)" in screen.detail_text()
        await pilot.press("r")
        await wait_until(pilot, lambda: "rejected 1 op(s)" in flash_text(screen), what="the rejection")
        await select_row(pilot, screen, lambda r: "[held] update" in r, "the held update, again")
        await pilot.press("a")
        await wait_until(pilot, lambda: "wrote 1 change(s)" in flash_text(screen), what="the approval")
        # Exactly the approved op: the kept card has the merged body, the rejected delete's card
        # stays, and so does the card whose delete is still held.
        assert MERGED in (stores.project.dir / KEEP).read_text()
        assert (stores.project.dir / GONE[0]).read_bytes() == before[GONE[0]]
        assert (stores.project.dir / GONE[1]).read_bytes() == before[GONE[1]]
        trash = stores.project.dir / ".trash"
        assert not trash.exists() or not [p for p in trash.rglob("*") if p.name in GONE]


class Recorder:
    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self) -> list[Any]:
        self.calls += 1
        return []


def applied_event() -> MemoryEventMessage:
    return MemoryEventMessage(JobApplied(job_id="job-test"))


async def test_the_automatic_consolidation_is_asked_after_a_job_applied_only_while_idle(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    gate = Gate("answer")
    server.script(MODEL, text("Held answer.").held(before=gate))
    server.script(MEMORY_MODEL, text("[]"))
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        recorder = Recorder()
        app.bridge.require().manager.maybe_consolidate = recorder  # type: ignore[method-assign]
        # Idle: asked at once.
        app.post_message(applied_event())
        await wait_until(pilot, lambda: recorder.calls == 1, what="asked while idle")
        # A turn running: not asked until the turn is over.
        await send(pilot, "a question")
        await gate.wait_reached_async()
        app.post_message(applied_event())
        await wait_until(pilot, lambda: app.memory.scale.auto_due, what="the event heard")
        await pilot.pause()
        assert recorder.calls == 1
        gate.release()
        await wait_until(pilot, lambda: recorder.calls >= 2, what="asked once the turn ended")


async def test_an_edit_and_the_pinned_box_are_saved_together(make_app, ws: Path) -> None:
    stores = seed_many(ws, 2)
    path = stores.project.dir / "project_knowledge_fact-00001.md"
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 2)
        editor = await open_editor_on(pilot, app, browser, "project", path.name)
        await replace_input(pilot, editor, "title", "Fact one, renamed")
        box = editor.query_one("#pinned", Checkbox)
        box.focus()
        await wait_until(pilot, lambda: box.has_focus)
        await pilot.press("space")
        await wait_until(pilot, lambda: box.value is True)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: not isinstance(app.screen, CardEditor), what="the editor closed")
        await wait_until(pilot, lambda: b"pinned: true" in path.read_bytes(), what="saved pinned")
        assert b"title: Fact one, renamed" in path.read_bytes()
        # Two batches, the pin last: u takes the pin back first, the edit stays.
        assert app.bridge.stores.history()[-1].label == f"{path.name} pinned by you"


# -- the search caches are warmed after the first frame ------------------------------------------


async def test_the_search_caches_are_built_after_the_first_frame_and_a_run_then_recalls(
    make_app, ws: Path, server: FakeAnthropic
) -> None:
    stores = seed_many(ws, 320)
    write_note(
        stores,
        Level.PROJECT,
        "project_knowledge_zz-lab.md",
        "Lab bench",
        "The frobnicator is calibrated weekly.",
        summary="hardware",
    )
    server.script(MODEL, text("calibrate it weekly"))
    server.script(MEMORY_MODEL, text("[]"))
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        runtime = app.bridge.require()
        cache = runtime.search.cache(Level.PROJECT)
        # Warmed by the app, not by the first Run: a Run's recall waits at most a moment.
        await wait_until(pilot, lambda: cache.ready_within(0), what="the project cache built")
        assert runtime.search.recall_wait is not None and runtime.search.recall_wait <= 1.0
        await send(pilot, "How do I calibrate the frobnicator?")
        await wait_until(pilot, lambda: len(server.requests_for(MODEL)) == 1, what="the turn's request")
        last = server.requests_for(MODEL)[0].body["messages"][-1]["content"]
        assert any(
            b.get("text", "").startswith("<memory-recall>") and "(project_knowledge_zz-lab.md)" in b["text"]
            for b in last
        )

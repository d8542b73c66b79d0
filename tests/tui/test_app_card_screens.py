"""The card browser, the card editor and /remember in the whole running App.

Pilot tests of ``PseudoClaudeApp``: real stores on disk, the real bridge and workers, the screens
of widgets/cards/ (browser, editor) driven by keys. Covered: browsing and the
filters over both levels; editing (saved as ``source: manual``, shown at once in the browser and
the side panel); new, delete to the trash and undo; moving a card to the other level; field
validation errors; conflicts with a change on disk (keep yours, take the disk's, deleted on
disk); /remember reaching the next Run as a ``<memory-update>``; a browser of 10,000 cards;
``$EDITOR`` (a script here) on a private copy applied as one undoable edit, with its invalid
results, a symlink and a conflict; and opening the browser at a card clicked in the side panel.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Label, Static, TextArea

from app.tui.app import PseudoClaudeApp
from memory.constants import Level, NoteType
from memory.model import NoteMeta
from memory.store.frontmatter import dump_note
from memory.store.stores import MemoryStores
from tests.support.fakeapi import FakeAnthropic, text
from tests.support.memtools import trust_workspace, write_note
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.cards.browser import CardBrowser
from widgets.cards.card_list import CardRow
from widgets.cards.conflict import ConflictModal
from widgets.cards.edit_problem import EditProblemModal
from widgets.cards.editor import CardEditor
from widgets.dialogs.confirm import ConfirmModal

SIZE = (140, 40)


# -- helpers -----------------------------------------------------------------------------------


def project_store(ws: Path) -> Path:
    return ws / ".PseudoClaude" / "memory"


def user_store() -> Path:
    return Path(os.environ["PSEUDOCLAUDE_HOME"]) / "memory"


def seed(ws: Path, *cards: tuple[str, str, str, str, str]) -> dict[str, tuple[str, str]]:
    """Cards written through the stores before the app starts: (level, type, title, summary,
    body) each; returns title -> (level, filename). A project store our code creates is trusted."""
    stores = MemoryStores(ws.resolve())
    out: dict[str, tuple[str, str]] = {}
    for level, type_, title, summary, body in cards:
        result = stores.create_card(level, type_, title, summary, body)
        assert result.status == "applied", result.reason
        out[title] = (str(result.level.value), result.filename)
    return out


def screen_lines(app: PseudoClaudeApp) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def titles(rows: Any) -> list[str]:
    return [r.title for r in rows]


def panel_titles(app: PseudoClaudeApp) -> list[str]:
    return [c.title for c in (*app.panel.state.project, *app.panel.state.user)]


async def type_text(pilot: Pilot[Any], value: str) -> None:
    await pilot.press(*value)


async def open_cards(
    pilot: Pilot[Any], app: PseudoClaudeApp, count: int, timeout: float = 10.0
) -> CardBrowser:
    """/memory, then wait until the browser lists ``count`` cards."""
    await send(pilot, "/memory")
    await wait_until(pilot, lambda: isinstance(app.screen, CardBrowser), what="the card browser")
    browser = app.screen
    assert isinstance(browser, CardBrowser)
    # Keys go to the list once it has the focus (the screen is mounted).
    await wait_until(pilot, lambda: browser.query_one("#cb-list").has_focus, what="the card list focused")
    await wait_until(
        pilot,
        lambda: len(browser.visible_rows) == count,
        timeout,
        what=f"{count} cards listed (have {len(browser.visible_rows)})",
    )
    return browser


async def open_editor_on(
    pilot: Pilot[Any], app: PseudoClaudeApp, browser: CardBrowser, level: str, filename: str
) -> CardEditor:
    browser.select(level, filename)
    await wait_until(pilot, lambda: browser.selected is not None and browser.selected.filename == filename)
    await pilot.press("e")
    await wait_until(pilot, lambda: isinstance(app.screen, CardEditor), what="the card editor")
    editor = app.screen
    assert isinstance(editor, CardEditor)
    return editor


def label_text(screen: Any, selector: str) -> str:
    widget = screen.query_one(selector, Label)
    return str(widget.content)


async def set_body(pilot: Pilot[Any], editor: CardEditor, body: str) -> None:
    """Replace the body as a person would end up with it: load the text, then type one more key
    (so the TextArea's own change handling runs)."""
    area = editor.query_one("#body", TextArea)
    area.focus()
    await wait_until(pilot, lambda: area.has_focus, what="the body focused")
    area.load_text(body)
    area.move_cursor(area.document.end)
    await pilot.press("!")
    await wait_until(pilot, lambda: area.text == body + "!", what="the body typed")


async def replace_input(pilot: Pilot[Any], editor: CardEditor, field: str, value: str) -> None:
    """Replace an Input's text: all but the last character set, the last one typed (a key press
    per character of a long value would be slow; the typed key still goes through the Input)."""
    box = editor.query_one(f"#{field}", Input)
    box.focus()
    await wait_until(pilot, lambda: box.has_focus, what=f"{field} focused")
    box.value = value[:-1]
    box.cursor_position = len(box.value)
    await pilot.press(value[-1])
    await wait_until(pilot, lambda: box.value == value, what=f"{field} typed")


# -- 1. browsing and filters -------------------------------------------------------------------


async def test_browse_filter_and_type_and_level_filters_over_both_levels(make_app, ws: Path) -> None:
    seed(
        ws,
        ("project", "project_knowledge", "Build with make", "make build", "Run make build."),
        ("project", "correction_feedback", "Never force push", "", "Use --force-with-lease."),
        ("user", "user_preference", "Tabs not spaces", "indentation", "Indent with tabs."),
        ("user", "reference_material", "API docs", "where the docs are", "See docs.example.com."),
    )
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 4)
        assert {(r.level, r.title) for r in browser.visible_rows} == {
            ("project", "Build with make"),
            ("project", "Never force push"),
            ("user", "Tabs not spaces"),
            ("user", "API docs"),
        }
        # Every card drawn on its own row with its level letter.
        await wait_until(pilot, lambda: any("Memory cards · 4 of 4" in line for line in screen_lines(app)))
        drawn = screen_lines(app)
        for letter, title in (
            ("P", "Build with make"),
            ("P", "Never force push"),
            ("U", "Tabs not spaces"),
            ("U", "API docs"),
        ):
            assert any(line.lstrip().startswith(letter + " ") and title in line for line in drawn), (
                title,
                drawn,
            )

        # "/" focuses the filter box; typing filters live; "1" typed there is text, not a type key.
        await pilot.press("slash")
        filter_box = browser.query_one("#cb-filter", Input)
        await wait_until(pilot, lambda: filter_box.has_focus, what="the filter box focused")
        await type_text(pilot, "TABS")
        await wait_until(pilot, lambda: titles(browser.visible_rows) == ["Tabs not spaces"], what="filtered")
        assert browser.filter_text == "TABS"
        await wait_until(
            pilot, lambda: any("1 of 4" in line and "filter: TABS" in line for line in screen_lines(app))
        )
        await type_text(pilot, " 1")
        assert browser.type_filter is None and filter_box.value == "TABS 1"
        await wait_until(pilot, lambda: browser.visible_rows == [], what="no card has both words")
        await pilot.press("backspace", "backspace")
        await wait_until(pilot, lambda: titles(browser.visible_rows) == ["Tabs not spaces"])
        # Enter returns to the list; the letter keys act there.
        await pilot.press("enter")
        await wait_until(pilot, lambda: browser.query_one("#cb-list").has_focus, what="the list focused")
        assert isinstance(app.screen, CardBrowser)
        await pilot.press("2")  # correction_feedback AND "tabs": nothing
        await wait_until(
            pilot, lambda: browser.visible_rows == [] and browser.type_filter == "correction_feedback"
        )
        await wait_until(
            pilot, lambda: browser.preview_row is None and "No card matches." in " ".join(screen_lines(app))
        )
        await pilot.press("1")
        await wait_until(pilot, lambda: titles(browser.visible_rows) == ["Tabs not spaces"])

        # Clear the filter text (Esc leaves the box, the screen stays).
        await pilot.press("0", "slash", "backspace", "backspace", "backspace", "backspace", "escape")
        await wait_until(pilot, lambda: len(browser.visible_rows) == 4, what="the filter cleared")
        assert isinstance(app.screen, CardBrowser) and browser.query_one("#cb-list").has_focus

        by_key = {"1": "Tabs not spaces", "2": "Never force push", "3": "Build with make", "4": "API docs"}
        for key, title in by_key.items():
            await pilot.press(key)
            await wait_until(
                pilot, lambda t=title: titles(browser.visible_rows) == [t], what=f"type key {key}"
            )
        await pilot.press("0")
        await wait_until(pilot, lambda: len(browser.visible_rows) == 4 and browser.type_filter is None)

        # l cycles the level: both -> project -> user -> both.
        await pilot.press("l")
        await wait_until(pilot, lambda: browser.level_filter == "project")
        assert {r.level for r in browser.visible_rows} == {"project"} and len(browser.visible_rows) == 2
        await pilot.press("l")
        await wait_until(pilot, lambda: browser.level_filter == "user")
        assert sorted(titles(browser.visible_rows)) == ["API docs", "Tabs not spaces"]
        await wait_until(pilot, lambda: any("level: user" in line for line in screen_lines(app)))
        await pilot.press("l")
        await wait_until(pilot, lambda: browser.level_filter == "both" and len(browser.visible_rows) == 4)
        # Esc on the list goes back to the chat.
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, CardBrowser), what="back to the chat")


# -- 2. editing --------------------------------------------------------------------------------


async def test_edit_a_card_in_the_editor_writes_it_as_manual_and_the_panel_shows_it_at_once(
    make_app, ws: Path
) -> None:
    stores = MemoryStores(ws.resolve())
    path = write_note(
        stores,
        Level.PROJECT,
        "project_knowledge_build.md",
        "Build with make",
        "Run make build.",
        summary="make build",
    )
    stores.rebuild_indexes()  # the panel lists what MEMORY.md says
    trust_workspace(ws)
    assert "source: seed" in path.read_text()
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: panel_titles(app) == ["Build with make"], what="the panel")
        browser = await open_cards(pilot, app, 1)
        editor = await open_editor_on(pilot, app, browser, "project", "project_knowledge_build.md")
        assert editor.draft().title == "Build with make" and editor.draft().body == "Run make build.\n"
        await replace_input(pilot, editor, "title", "Build with ninja")
        await set_body(pilot, editor, "Run ninja, not make.")
        assert editor.dirty
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.screen is browser, what="the editor to close after saving")

        on_disk = path.read_text()
        assert "title: Build with ninja" in on_disk and "Run ninja, not make.!" in on_disk
        assert "source: manual" in on_disk and "Run make build." not in on_disk
        await wait_until(
            pilot,
            lambda: browser.selected is not None and browser.selected.title == "Build with ninja",
            what="the browser to select the edited card",
        )
        assert browser.selected.source == "manual" and titles(browser.visible_rows) == ["Build with ninja"]
        assert "saved project card project_knowledge_build.md" in browser.flash_text
        await wait_until(pilot, lambda: panel_titles(app) == ["Build with ninja"], what="the panel to follow")
        await wait_until(
            pilot, lambda: browser.preview_row is not None and browser.preview_row.title == "Build with ninja"
        )


# -- 3. new, delete, undo ----------------------------------------------------------------------


async def test_new_card_with_n_then_delete_with_d_y_goes_to_the_trash_then_undo_brings_it_back(
    make_app, ws: Path
) -> None:
    seed(ws, ("user", "user_preference", "Tabs not spaces", "", "Indent with tabs."))
    store = project_store(ws)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 1)
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, CardEditor), what="a new card's editor")
        editor = app.screen
        assert isinstance(editor, CardEditor) and editor.filename is None
        assert "New card" in str(editor.query_one("#heading", Static).content)
        draft = editor.draft()
        assert (draft.level, draft.type, draft.title, draft.body) == ("project", "project_knowledge", "", "")
        await type_text(pilot, "Deploy on Fridays")  # the title has the focus
        await replace_input(pilot, editor, "summary", "deploys are fine on Fridays")
        await set_body(pilot, editor, "We deploy on Fridays")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.screen is browser, what="the editor to close")

        card = store / "project_knowledge_deploy-on-fridays.md"
        assert card.exists(), sorted(p.name for p in store.iterdir())
        assert "source: manual" in card.read_text() and "We deploy on Fridays!" in card.read_text()
        await wait_until(pilot, lambda: len(browser.visible_rows) == 2)
        await wait_until(
            pilot,
            lambda: browser.selected is not None and browser.selected.filename == card.name,
            what="the new card selected",
        )
        assert "saved new project card" in browser.flash_text
        await wait_until(pilot, lambda: "Deploy on Fridays" in panel_titles(app))

        # d asks; y deletes to the store's trash.
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the delete confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: not card.exists(), what="the card deleted")
        trashed = list((store / ".trash").rglob("*deploy-on-fridays*"))
        assert trashed, "the deleted card is in the store's .trash/"
        await wait_until(pilot, lambda: titles(browser.visible_rows) == ["Tabs not spaces"])
        await wait_until(pilot, lambda: "deleted project card" in browser.flash_text)
        await wait_until(pilot, lambda: "Deploy on Fridays" not in panel_titles(app))

        # u undoes the delete.
        await pilot.press("u")
        await wait_until(pilot, lambda: card.exists(), what="the card back")
        assert "We deploy on Fridays!" in card.read_text()
        await wait_until(pilot, lambda: "undid the last memory batch" in browser.flash_text)
        await wait_until(
            pilot, lambda: sorted(titles(browser.visible_rows)) == ["Deploy on Fridays", "Tabs not spaces"]
        )
        await wait_until(pilot, lambda: "Deploy on Fridays" in panel_titles(app))


# -- 4. move -----------------------------------------------------------------------------------


async def test_move_a_card_to_the_other_level_with_m(make_app, ws: Path) -> None:
    # The moved card is first in the list before and second after (project cards come first,
    # each level sorted by filename): the selection must follow the card, not its position.
    cards = seed(
        ws,
        ("project", "project_knowledge", "Alpha build", "", "Keep answers short."),
        ("project", "project_knowledge", "Beta deploy", "", "Run make build."),
        ("user", "user_preference", "Tabs not spaces", "", "Indent with tabs."),
    )
    _, filename = cards["Alpha build"]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 3)
        assert browser.visible_rows[0].filename == filename
        browser.select("project", filename)
        await wait_until(
            pilot, lambda: browser.selected is not None and browser.selected.filename == filename
        )
        await pilot.press("m")
        moved = user_store() / filename
        await wait_until(
            pilot,
            lambda: moved.exists() and not (project_store(ws) / filename).exists(),
            what="the card moved to the user store",
        )
        assert "Keep answers short." in moved.read_text() and "source: manual" in moved.read_text()
        await wait_until(
            pilot,
            lambda: (
                browser.selected is not None
                and (browser.selected.level, browser.selected.filename) == ("user", filename)
            ),
            what="the browser to select the card at its new level",
        )
        assert [(r.level, r.title) for r in browser.visible_rows] == [
            ("project", "Beta deploy"),
            ("user", "Alpha build"),
            ("user", "Tabs not spaces"),
        ]
        assert "moved to user" in browser.flash_text
        await wait_until(
            pilot, lambda: sorted(c.title for c in app.panel.state.user) == ["Alpha build", "Tabs not spaces"]
        )
        assert [c.title for c in app.panel.state.project] == ["Beta deploy"]


async def test_a_card_moved_with_m_keeps_its_creation_date(make_app, ws: Path) -> None:
    stores = MemoryStores(ws.resolve())
    write_note(stores, Level.PROJECT, "project_knowledge_old-card.md", "Old card", "Written long ago.")
    trust_workspace(ws)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 1)
        browser.select("project", "project_knowledge_old-card.md")
        await wait_until(pilot, lambda: browser.selected is not None, what="the card selected")
        await pilot.press("m")
        moved = user_store() / "project_knowledge_old-card.md"
        await wait_until(pilot, moved.exists, what="the card moved to the user store")
        meta = MemoryStores(ws.resolve()).read_note("user", "project_knowledge_old-card.md").meta
        assert meta.created == "2026-01-01T00:00:00Z" and meta.updated != meta.created
        assert meta.source == "seed"  # who wrote the words: a move changes none of them


# -- 5. validation -----------------------------------------------------------------------------


async def test_an_editor_validation_error_is_shown_next_to_its_field_and_nothing_is_written(
    make_app, ws: Path
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 0)
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, CardEditor))
        editor = app.screen
        assert isinstance(editor, CardEditor)
        await replace_input(pilot, editor, "summary", "s" * 201)
        await set_body(pilot, editor, "Releases are tagged from main")
        await pilot.press("ctrl+s")
        await wait_until(
            pilot, lambda: "a title is needed" in label_text(editor, "#title-error"), what="the title's error"
        )
        assert "at most 200 characters" in label_text(editor, "#summary-error")
        assert label_text(editor, "#body-error") == ""
        assert editor.query_one("#title", Input).has_focus  # the first field with an error
        drawn = "\n".join(screen_lines(app))
        assert "a title is needed" in drawn and "at most 200 characters" in drawn
        assert app.screen is editor and not editor.saving
        assert not project_store(ws).exists() or not list(project_store(ws).glob("*_*.md"))
        assert not user_store().exists() or not list(user_store().glob("*_*.md"))

        # Fixed: Ctrl+S saves and the errors are gone with the editor.
        await type_text(pilot, "Release tags")
        await replace_input(pilot, editor, "summary", "tags come from main")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.screen is browser, what="the editor to close")
        card = project_store(ws) / "project_knowledge_release-tags.md"
        assert card.exists() and "summary: tags come from main" in card.read_text()
        await wait_until(pilot, lambda: titles(browser.visible_rows) == ["Release tags"])


# -- 6. conflicts ------------------------------------------------------------------------------


def _rewrite_body(path: Path, old: str, new: str) -> None:
    data = path.read_text()
    assert old in data
    path.write_text(data.replace(old, new))


async def test_an_editor_conflict_shows_both_versions_and_keep_yours_or_take_the_disks(
    make_app, ws: Path
) -> None:
    cards = seed(ws, ("project", "project_knowledge", "Build with make", "", "Run make build."))
    level, filename = cards["Build with make"]
    path = project_store(ws) / filename
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 1)

        # Keep yours: your text overwrites the disk's.
        editor = await open_editor_on(pilot, app, browser, level, filename)
        await set_body(pilot, editor, "Mine: run make all")
        _rewrite_body(path, "Run make build.", "Disk: run ninja")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ConflictModal), what="the conflict view")
        modal = app.screen
        mine_text = str(modal.query_one("#mine-text", Static).content)
        disk_text = str(modal.query_one("#disk-text", Static).content)
        assert "Mine: run make all!" in mine_text and "Disk: run ninja" in disk_text
        drawn = "\n".join(screen_lines(app))
        assert "Mine: run make all!" in drawn and "Disk: run ninja" in drawn and filename in drawn
        await pilot.press("k")
        await wait_until(pilot, lambda: app.screen is browser, what="saved over the disk's version")
        assert "Mine: run make all!" in path.read_text() and "Disk: run ninja" not in path.read_text()
        await wait_until(
            pilot, lambda: browser.selected is not None and "Mine: run make all!" in browser.selected.body
        )

        # Take the disk's: the editor shows it, nothing is written.
        editor = await open_editor_on(pilot, app, browser, level, filename)
        await set_body(pilot, editor, "Mine again")
        _rewrite_body(path, "Mine: run make all!", "Disk again: run bazel")
        on_disk = path.read_bytes()
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ConflictModal), what="the conflict view")
        await pilot.press("t")
        await wait_until(pilot, lambda: app.screen is editor, what="back in the editor")
        await wait_until(
            pilot,
            lambda: editor.draft().body.strip() == "Disk again: run bazel",
            what="the editor to show the disk's version",
        )
        assert not editor.dirty and not editor.saving
        assert path.read_bytes() == on_disk
        # Saved from there, it is a normal edit of what is on disk now (no second conflict).
        await set_body(pilot, editor, "Disk again: run bazel, edited")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.screen is browser, what="saved")
        assert "Disk again: run bazel, edited!" in path.read_text()

        # Deleted on disk: the view says so; keep yours writes it again.
        editor = await open_editor_on(pilot, app, browser, level, filename)
        await set_body(pilot, editor, "Mine after the delete")
        path.unlink()
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ConflictModal), what="the conflict view")
        modal = app.screen
        assert "deleted on disk" in str(modal.query_one("#disk-text", Static).content)
        assert "Mine after the delete!" in str(modal.query_one("#mine-text", Static).content)
        await pilot.press("k")
        await wait_until(pilot, lambda: app.screen is browser, what="saved again")
        await wait_until(pilot, lambda: path.exists(), what="the card written again")
        assert "Mine after the delete!" in path.read_text()


# -- 7. /remember ------------------------------------------------------------------------------


async def test_remember_opens_the_editor_prefilled_and_the_saved_card_reaches_the_next_run(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, text("Noted."))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await send(pilot, "/remember Releases are tagged from main only")
        await wait_until(pilot, lambda: isinstance(app.screen, CardEditor), what="the editor")
        editor = app.screen
        assert isinstance(editor, CardEditor) and editor.filename is None
        draft = editor.draft()
        assert draft.body == "Releases are tagged from main only"
        assert draft.title == "Releases are tagged from main only"  # its first words (8 at most)
        assert (draft.level, draft.type, draft.summary) == ("project", "project_knowledge", "")
        card = project_store(ws) / "project_knowledge_releases-are-tagged-from-main-only.md"
        assert not card.exists(), "nothing is written before Ctrl+S"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: not isinstance(app.screen, CardEditor), what="the editor to close")
        await wait_until(pilot, lambda: card.exists(), what="the card on disk")
        assert "source: manual" in card.read_text()
        await wait_until(
            pilot, lambda: any(f"saved new project card {card.name}" in t for t in chat_texts(app))
        )
        await wait_until(pilot, lambda: "Releases are tagged from main only" in panel_titles(app))

        await send(pilot, "what do you know?")
        await wait_until(pilot, lambda: "Noted." in chat_texts(app), what="the answer")
        [request] = server.requests_for(MODEL)
        content = request.body["messages"][-1]["content"]
        first = content[0]["text"]
        assert first.startswith("<memory-update>"), first
        assert f"({card.name})" in first and "Releases are tagged from main only" in first
        assert content[-1] == {"type": "text", "text": "what do you know?"}


# -- 8. 10,000 cards ---------------------------------------------------------------------------


async def test_a_browser_of_10000_cards_filters_within_its_budget(
    make_app, ws: Path, record_property
) -> None:
    total = 10_000
    started = time.perf_counter()
    stores = MemoryStores(ws.resolve())
    folder = stores.user.dir
    folder.mkdir(parents=True, exist_ok=True)
    types = list(NoteType)
    for i in range(total):
        kind = types[i % len(types)]
        # Every 7th card mentions "zebra" in its body only: the filter searches bodies too.
        body = f"Card number {i}." + (" A zebra crossing." if i % 7 == 0 else "")
        meta = NoteMeta(
            title=f"Card {i:05d}",
            summary=f"summary {i}",
            type=kind,
            created="2026-01-01T00:00:00Z",
            updated="2026-01-01T00:00:00Z",
            source="seed",
        )
        (folder / f"{kind.value}_card-{i:05d}.md").write_bytes(dump_note(meta, body))
    written = time.perf_counter()
    stores.rebuild_indexes()
    indexed = time.perf_counter()
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot, timeout=30)
        ready = time.perf_counter()
        browser = await open_cards(pilot, app, total, timeout=30)
        loaded = time.perf_counter()
        await wait_until(pilot, lambda: any(f"{total:,} of {total:,}" in line for line in screen_lines(app)))
        await pilot.press("slash")
        await type_text(pilot, "zebra")
        expected = len(range(0, total, 7))
        await wait_until(pilot, lambda: len(browser.visible_rows) == expected, what="the filtered list")
        assert all("zebra" in r.body for r in browser.visible_rows)
        assert browser.filter_text == "zebra"
        await wait_until(
            pilot, lambda: any(f"{expected:,} of {total:,}" in line for line in screen_lines(app))
        )
        filter_ms = browser.last_filter_ms
    record_property("filter_ms", round(filter_ms, 2))
    print(
        f"\n10k cards: write {written - started:.2f}s, rebuild_indexes {indexed - written:.2f}s, "
        f"app ready {ready - indexed:.2f}s, /memory loaded {loaded - ready:.2f}s, "
        f"last filter {filter_ms:.2f} ms"
    )


# -- 9. $EDITOR --------------------------------------------------------------------------------
#
# The "editor" is a Python script run as $EDITOR: each run takes the next step of a plan (JSON),
# records the path and the bytes it was given, and does what the step says to that file.

FAKE_EDITOR = r"""
import base64, json, os, sys
plan_path, log_dir = os.environ["FAKE_EDITOR_PLAN"], os.environ["FAKE_EDITOR_LOG"]
steps = json.loads(open(plan_path).read())
n = len(os.listdir(log_dir)) // 2
step = steps[n]
target = sys.argv[-1]
with open(os.path.join(log_dir, f"{n}.bin"), "wb") as f:
    f.write(open(target, "rb").read())
with open(os.path.join(log_dir, f"{n}.path"), "w") as f:
    f.write(target)
if "disk_path" in step:  # a hand edit of the live card while the editor is open
    with open(step["disk_path"], "wb") as f:
        f.write(base64.b64decode(step["disk_b64"]))
if "write_b64" in step:
    with open(target, "wb") as f:
        f.write(base64.b64decode(step["write_b64"]))
if "symlink_to" in step:  # an editor that saves by replacing the file with a link
    os.unlink(target)
    os.symlink(step["symlink_to"], target)
sys.exit(step.get("exit", 0))
"""


class FakeEditor:
    """$EDITOR for one test: ``plan(*steps)`` says what each run does; ``seen(n)`` is what run n
    was given (path, bytes)."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.script = tmp_path / "fake-editor.py"
        self.script.write_text(f"#!{sys.executable}\n{FAKE_EDITOR}")
        self.script.chmod(0o700)
        self.plan_path = tmp_path / "editor-plan.json"
        self.log = tmp_path / "editor-log"
        self.log.mkdir()
        self.plan()
        monkeypatch.delenv("VISUAL", raising=False)
        monkeypatch.setenv("EDITOR", shlex.quote(str(self.script)))
        monkeypatch.setenv("FAKE_EDITOR_PLAN", str(self.plan_path))
        monkeypatch.setenv("FAKE_EDITOR_LOG", str(self.log))

    def plan(self, *steps: dict[str, Any]) -> None:
        self.plan_path.write_text(json.dumps(list(steps)))

    @staticmethod
    def write(data: bytes, **more: Any) -> dict[str, Any]:
        return {"write_b64": base64.b64encode(data).decode(), **more}

    @property
    def runs(self) -> int:
        return len(list(self.log.glob("*.path")))

    def seen(self, n: int) -> tuple[Path, bytes]:
        return Path((self.log / f"{n}.path").read_text()), (self.log / f"{n}.bin").read_bytes()


def card_file(title: str, type_: str, summary: str, body: str) -> bytes:
    return f"---\ntitle: {title}\nsummary: {summary}\ntype: {type_}\n---\n{body}".encode()


def history_len(ws: Path) -> int:
    return len(MemoryStores(ws.resolve()).history())


def copies_left() -> list[Path]:
    tmp = Path(os.environ["PSEUDOCLAUDE_HOME"]) / "tmp"
    return sorted(tmp.rglob("*")) if tmp.exists() else []


INVALID = b"---\ntitle: [unclosed\ntype: project_knowledge\n---\nbytes \xff\xfe that are not UTF-8\n"


async def press_o_on(pilot: Pilot[Any], browser: CardBrowser, level: str, filename: str) -> None:
    browser.select(level, filename)
    await wait_until(pilot, lambda: browser.selected is not None and browser.selected.filename == filename)
    await pilot.press("o")


async def problem_modal(pilot: Pilot[Any], app: PseudoClaudeApp) -> EditProblemModal:
    await wait_until(
        pilot,
        lambda: isinstance(app.screen, EditProblemModal) and app.screen.query("#edited-text"),
        what="the problem modal",
    )
    modal = app.screen
    assert isinstance(modal, EditProblemModal)
    return modal


async def test_o_with_invalid_yaml_and_bytes_that_are_not_utf8_keeps_the_card_and_the_history(
    make_app, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cards = seed(ws, ("project", "project_knowledge", "Build with make", "", "Run make build."))
    level, filename = cards["Build with make"]
    path = project_store(ws) / filename
    before, entries = path.read_bytes(), history_len(ws)
    editor = FakeEditor(tmp_path, monkeypatch)
    editor.plan(editor.write(INVALID))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 1)
        await press_o_on(pilot, browser, level, filename)
        modal = await problem_modal(pilot, app)
        # The editor was given a private copy, never the card.
        copy, given = editor.seen(0)
        assert copy != path and given == before and copy.name == filename
        assert not copy.is_relative_to(project_store(ws)) and not copy.is_relative_to(user_store())
        assert path.read_bytes() == before and history_len(ws) == entries
        problem = str(modal.query_one("#problem", Static).content)
        assert "not valid UTF-8" in problem and "\n" not in problem
        # The problem, the choice and the person's text, drawn.
        wanted = ("Your edit was not applied", "not valid UTF-8", "Edit again", "that are not UTF-8")
        await wait_until(pilot, lambda: all(w in "\n".join(screen_lines(app)) for w in wanted), what="drawn")
        assert copy.read_bytes() == INVALID  # and kept, until discarded
        await pilot.press("d")
        await wait_until(pilot, lambda: app.screen is browser, what="back in the browser")
        await wait_until(pilot, lambda: "discarded your edit" in browser.flash_text)
        await wait_until(pilot, lambda: copies_left() == [], what="the private copy removed")
        assert path.read_bytes() == before and history_len(ws) == entries
        assert browser.selected is not None and browser.selected.title == "Build with make"


async def test_o_edit_again_reopens_the_persons_own_text_and_u_then_undoes_only_that_edit(
    make_app, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cards = seed(ws, ("project", "project_knowledge", "Build with make", "", "Run make build."))
    level, filename = cards["Build with make"]
    path = project_store(ws) / filename
    before = path.read_bytes()
    editor = FakeEditor(tmp_path, monkeypatch)
    fixed = card_file("Build with ninja", "project_knowledge", "ninja", "Run ninja.\n")
    editor.plan(editor.write(INVALID), editor.write(fixed))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        # An unrelated card from /remember: the last batch before the editor's.
        await send(pilot, "/remember Releases are tagged from main")
        await wait_until(pilot, lambda: isinstance(app.screen, CardEditor), what="the /remember editor")
        await pilot.press("ctrl+s")
        await wait_until(
            pilot, lambda: not isinstance(app.screen, CardEditor), what="the /remember card saved"
        )
        remembered = project_store(ws) / "project_knowledge_releases-are-tagged-from-main.md"
        await wait_until(pilot, lambda: remembered.exists())
        remembered_bytes, entries = remembered.read_bytes(), history_len(ws)

        browser = await open_cards(pilot, app, 2)
        await press_o_on(pilot, browser, level, filename)
        await problem_modal(pilot, app)
        assert path.read_bytes() == before and history_len(ws) == entries
        await pilot.press("e")
        await wait_until(pilot, lambda: editor.runs == 2, what="the editor opened again")
        # The second run got the person's text as they left it, on the same private copy.
        assert editor.seen(1) == (editor.seen(0)[0], INVALID)
        await wait_until(
            pilot, lambda: b"Build with ninja" in path.read_bytes(), what="the fixed edit applied"
        )
        await wait_until(pilot, lambda: "saved project card" in browser.flash_text)
        assert history_len(ws) == entries + 1
        await wait_until(pilot, lambda: copies_left() == [], what="the private copy removed")

        await pilot.press("u")
        await wait_until(pilot, lambda: path.read_bytes() == before, what="the card's old bytes back")
        await wait_until(pilot, lambda: "undid the last memory batch (1 change(s))" in browser.flash_text)
        assert remembered.read_bytes() == remembered_bytes
        trash = project_store(ws) / ".trash"
        assert not trash.exists() or not list(trash.rglob("*releases*"))


async def test_o_with_the_copy_replaced_by_a_symlink_keeps_the_card_and_shows_the_problem(
    make_app, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cards = seed(ws, ("project", "project_knowledge", "Build with make", "", "Run make build."))
    level, filename = cards["Build with make"]
    path = project_store(ws) / filename
    before, entries = path.read_bytes(), history_len(ws)
    # A valid card elsewhere: were the link followed, it would become the edit.
    planted = tmp_path / "planted.md"
    planted.write_bytes(card_file("Planted", "project_knowledge", "", "planted text\n"))
    editor = FakeEditor(tmp_path, monkeypatch)
    editor.plan({"symlink_to": str(planted)})
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 1)
        await press_o_on(pilot, browser, level, filename)
        modal = await problem_modal(pilot, app)
        assert "a symlink" in str(modal.query_one("#problem", Static).content)
        assert path.read_bytes() == before and not path.is_symlink() and history_len(ws) == entries
        assert "planted text" not in "\n".join(screen_lines(app))
        await pilot.press("d")
        await wait_until(pilot, lambda: copies_left() == [], what="the private copy (a link) removed")
        assert planted.exists() and path.read_bytes() == before
        await wait_until(pilot, lambda: len(browser.visible_rows) == 1)
        assert browser.visible_rows[0].title == "Build with make"


async def test_o_valid_edit_is_one_manual_batch_and_u_restores_exactly_the_old_bytes(
    make_app, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cards = seed(
        ws,
        ("project", "project_knowledge", "Build with make", "", "Run make build."),
        ("user", "user_preference", "Tabs not spaces", "", "Indent with tabs."),
    )
    level, filename = cards["Build with make"]
    path = project_store(ws) / filename
    other = user_store() / cards["Tabs not spaces"][1]
    before, other_before, entries = path.read_bytes(), other.read_bytes(), history_len(ws)
    editor = FakeEditor(tmp_path, monkeypatch)
    # First an editor that saves nothing new, then a new title and type (an edit, not a rename).
    editor.plan(
        {}, editor.write(card_file("Renamed in the editor", "reference_material", "s", "Run ninja.\n"))
    )
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "Build with make" in panel_titles(app))
        browser = await open_cards(pilot, app, 2)
        await press_o_on(pilot, browser, level, filename)
        await wait_until(pilot, lambda: "no changes" in browser.flash_text, what="no changes said")
        assert path.read_bytes() == before and history_len(ws) == entries
        await wait_until(pilot, lambda: copies_left() == [])

        await press_o_on(pilot, browser, level, filename)
        await wait_until(
            pilot, lambda: b"Renamed in the editor" in path.read_bytes(), what="the edit applied"
        )
        await wait_until(
            pilot, lambda: f"saved project card {filename} from fake-editor.py" in browser.flash_text
        )
        text = path.read_text()
        assert "source: manual" in text and "type: reference_material" in text and "Run ninja." in text
        store = MemoryStores(ws.resolve())
        assert len(store.history()) == entries + 1
        last = store.history()[-1]
        assert last.source == "manual" and [(c.level, c.filename) for c in last.changes] == [
            (Level.PROJECT, filename)
        ]
        await wait_until(
            pilot,
            lambda: browser.selected is not None and browser.selected.title == "Renamed in the editor",
            what="the browser to follow",
        )
        assert (browser.selected.level, browser.selected.filename) == (level, filename)
        await wait_until(
            pilot, lambda: "Renamed in the editor" in panel_titles(app), what="the panel to follow"
        )
        assert "Renamed in the editor" in (project_store(ws) / "MEMORY.md").read_text()
        await wait_until(pilot, lambda: copies_left() == [])

        await pilot.press("u")
        await wait_until(pilot, lambda: path.read_bytes() == before, what="the old bytes back")
        assert other.read_bytes() == other_before
        assert sorted(p.name for p in project_store(ws).glob("*_*.md")) == [filename]
        await wait_until(pilot, lambda: "Build with make" in panel_titles(app))


async def test_o_with_a_hand_edit_on_disk_while_the_editor_is_open_shows_the_conflict_view(
    make_app, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cards = seed(ws, ("project", "project_knowledge", "Build with make", "", "Run make build."))
    level, filename = cards["Build with make"]
    path = project_store(ws) / filename
    hand = path.read_bytes().replace(b"Run make build.", b"Disk: run bazel")
    mine = card_file("Build with make", "project_knowledge", "", "Mine: run ninja\n")
    editor = FakeEditor(tmp_path, monkeypatch)
    editor.plan(editor.write(mine, disk_path=str(path), disk_b64=base64.b64encode(hand).decode()))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 1)
        entries = history_len(ws)
        await press_o_on(pilot, browser, level, filename)
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, ConflictModal) and app.screen.query("#disk-text"),
            what="the conflict view",
        )
        modal = app.screen
        assert "Mine: run ninja" in str(modal.query_one("#mine-text", Static).content)
        assert "Disk: run bazel" in str(modal.query_one("#disk-text", Static).content)
        assert path.read_bytes() == hand and history_len(ws) == entries
        await pilot.press("k")
        await wait_until(pilot, lambda: b"Mine: run ninja" in path.read_bytes(), what="yours over the disk's")
        assert "source: manual" in path.read_text() and history_len(ws) == entries + 1
        await wait_until(pilot, lambda: copies_left() == [], what="the private copy removed")
        await wait_until(
            pilot, lambda: browser.selected is not None and "Mine: run ninja" in browser.selected.body
        )


# -- 10. from the side panel -------------------------------------------------------------------


async def test_a_click_on_a_card_in_the_side_panel_opens_the_browser_at_that_card(make_app, ws: Path) -> None:
    cards = seed(
        ws,
        ("project", "project_knowledge", "Build with make", "", "Run make build."),
        ("project", "project_knowledge", "Deploy on Fridays", "", "Deploys are fine on Fridays."),
        ("user", "user_preference", "Tabs not spaces", "", "Indent with tabs."),
    )
    wanted = cards["Deploy on Fridays"]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: len(panel_titles(app)) == 3, what="the panel's cards")
        card_list = app.panel._cards
        await wait_until(
            pilot, lambda: any(card_list.card_at(y) == wanted for y in range(60)), what="the panel laid out"
        )
        y = next(y for y in range(60) if card_list.card_at(y) == wanted)
        assert await pilot.click(card_list, offset=(2, y))
        await wait_until(pilot, lambda: isinstance(app.screen, CardBrowser), what="the browser")
        browser = app.screen
        assert isinstance(browser, CardBrowser)
        await wait_until(pilot, lambda: len(browser.visible_rows) == 3)
        await wait_until(
            pilot,
            lambda: (
                browser.selected is not None and (browser.selected.level, browser.selected.filename) == wanted
            ),
            what="the clicked card selected",
        )
        await wait_until(
            pilot,
            lambda: (
                isinstance(browser.preview_row, CardRow) and browser.preview_row.title == "Deploy on Fridays"
            ),
        )
        # Back, then the panel's message with another card: the browser opens there.
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, CardBrowser))
        from widgets.panel.memory_panel import MemoryPanel

        other = cards["Tabs not spaces"]
        app.panel.post_message(MemoryPanel.OpenBrowser(other))
        await wait_until(pilot, lambda: isinstance(app.screen, CardBrowser))
        browser = app.screen
        await wait_until(
            pilot,
            lambda: (
                browser.selected is not None and (browser.selected.level, browser.selected.filename) == other
            ),
        )

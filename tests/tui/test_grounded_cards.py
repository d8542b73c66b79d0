"""Grounded cards in the running App: stale marks in the side panel and the card
browser, kept fresh while the app runs; the browser's stale filter, its sort by use and each
card's use line; "still true" (c) and its undo; the editor's citations field.

Pilot tests of ``PseudoClaudeApp`` over real stores: a project card cites a workspace file, the
test changes the file, and the App's re-check (``app.memory.grounding``: after a turn and on a timer)
is driven directly or with a short interval, never by sleeping.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from app.tui.app import PseudoClaudeApp
from memory.model import Operation
from memory.store.stores import MemoryStores
from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MODEL, send, wait_ready, wait_until
from widgets.cards.browser import CardBrowser
from widgets.cards.editor import CardEditor

SIZE = (140, 40)
CHANGED = "Makefile changed since this card was written"


def seed(ws: Path) -> dict[str, str]:
    """Three project cards: "Build" cites the Makefile, "Layout" cites src/app.py, "Style" cites
    nothing. Returns title -> filename."""
    (ws / "Makefile").write_text("all:\n\techo hi\n")
    (ws / "src").mkdir(exist_ok=True)
    (ws / "src" / "app.py").write_text("print('app')\n")
    stores = MemoryStores(ws.resolve())
    out = {}
    for title, cites in (("Build", ("Makefile",)), ("Layout", ("src/app.py:1-1",)), ("Style", None)):
        op = Operation(
            action="create",
            level="project",
            type="project_knowledge",
            title=title,
            summary=f"{title.lower()} notes",
            content=f"{title} body.",
            cites=cites,
        )
        result = stores.apply([(0, op)], source="manual")
        assert result.applied and not result.dropped_cites, result
        out[title] = result.applied[0].filename
    return out


def panel_card(app: PseudoClaudeApp, title: str) -> Any:
    [card] = [c for c in app.panel.state.project if c.title == title]
    return card


def screen_text(app: PseudoClaudeApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def open_browser(pilot: Pilot[Any], app: PseudoClaudeApp, count: int) -> CardBrowser:
    await send(pilot, "/memory")
    await wait_until(pilot, lambda: isinstance(app.screen, CardBrowser), what="the card browser")
    browser = app.screen
    assert isinstance(browser, CardBrowser)
    await wait_until(
        pilot, lambda: browser.is_mounted and browser.query_one("#cb-list").has_focus, what="the list focused"
    )
    await wait_until(pilot, lambda: len(browser.visible_rows) == count, what=f"{count} cards")
    return browser


async def select(pilot: Pilot[Any], browser: CardBrowser, filename: str) -> None:
    browser.select("project", filename)
    await wait_until(
        pilot,
        lambda: browser.preview_row is not None and browser.preview_row.filename == filename,
        what="the card's preview",
    )


# -- the side panel, kept fresh ------------------------------------------------------------------


async def test_the_panel_marks_a_card_stale_with_its_reason_once_its_cited_file_changes(
    make_app, ws: Path
) -> None:
    names = seed(ws)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        assert panel_card(app, "Build").stale is None
        app.memory.grounding.recheck()
        await wait_until(pilot, lambda: app.memory.grounding.checks == 1, what="the first check")
        changes = app.memory.grounding.changes
        app.memory.grounding.recheck()  # nothing changed: the panel is not rebuilt
        await wait_until(pilot, lambda: app.memory.grounding.checks == 2, what="the second check")
        assert app.memory.grounding.changes == changes

        (ws / "Makefile").write_text("all:\n\techo changed\n")
        app.memory.grounding.recheck()  # as after a turn's end
        await wait_until(pilot, lambda: panel_card(app, "Build").stale == CHANGED, what="the stale mark")
        assert panel_card(app, "Layout").stale is None and panel_card(app, "Style").stale is None
        assert app.memory.grounding.last == frozenset({(names["Build"], CHANGED)})
        shown = screen_text(app)
        assert "stale know Build" in shown and "· 1 stale" in shown
        # The reason is on the screen (under the card), not only in a tooltip.
        assert "Makefile changed since" in shown


async def test_the_idle_timer_picks_up_a_cited_file_deleted_while_the_app_runs(make_app, ws: Path) -> None:
    seed(ws)
    app = make_app()
    app.memory.grounding.interval = 0.05
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: app.memory.grounding.checks >= 1, what="a timed check")
        assert panel_card(app, "Layout").stale is None
        (ws / "src" / "app.py").unlink()
        await wait_until(
            pilot,
            lambda: panel_card(app, "Layout").stale == "src/app.py was deleted",
            what="the deleted mark",
        )


async def test_a_turns_end_rechecks_the_citations(make_app, server: FakeAnthropic, ws: Path) -> None:
    seed(ws)
    server.script(MODEL, text("Done."))
    app = make_app(server, memory_mode="off")
    app.memory.grounding.interval = 3600.0  # the timer stays out of it
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        assert app.memory.grounding.checks == 0
        await send(pilot, "Hello")
        await wait_until(pilot, lambda: app.memory.grounding.checks == 1, what="the check after the turn")


async def test_a_failing_check_is_logged_not_shown(make_app, ws: Path, caplog: Any) -> None:
    seed(ws)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)

        async def broken() -> frozenset[tuple[str, str]]:
            raise OSError("disk on fire")

        app.services.cards.stale_cards = broken  # type: ignore[method-assign]
        blocks = len(app.chat.blocks)
        app.memory.grounding.recheck()
        await wait_until(pilot, lambda: "disk on fire" in caplog.text, what="the logged failure")
        await pilot.pause()
        assert len(app.chat.blocks) == blocks and app.memory.grounding.checks == 0


# -- the card browser: marks, filter, use, sort ---------------------------------------------------


async def test_the_browser_filters_stale_cards_sorts_by_use_and_shows_each_cards_use(
    make_app, ws: Path
) -> None:
    names = seed(ws)
    stores = MemoryStores(ws.resolve())
    for _ in range(2):
        stores.record_read("project", names["Layout"])
    stores.record_read("project", names["Style"])
    (ws / "Makefile").write_text("changed\n")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_browser(pilot, app, 3)
        build = next(r for r in browser.visible_rows if r.title == "Build")
        assert build.stale == CHANGED
        await select(pilot, browser, names["Build"])
        shown = screen_text(app)
        assert "P know stale Build · Makefile changed" in shown  # the list row (cut to its width)
        assert f"stale: {CHANGED}" in shown and "never read" in shown  # the detail
        assert "Makefile" in shown.split("Cites")[1]

        await pilot.press("s")
        await wait_until(
            pilot, lambda: [r.title for r in browser.visible_rows] == ["Build"], what="stale only"
        )
        assert "stale only" in screen_text(app)
        await pilot.press("s")
        await wait_until(pilot, lambda: len(browser.visible_rows) == 3, what="all again")

        await pilot.press("r")
        await wait_until(
            pilot,
            lambda: [r.title for r in browser.visible_rows] == ["Layout", "Style", "Build"],
            what="most read first",
        )
        assert "sort: use" in screen_text(app)
        await select(pilot, browser, names["Layout"])
        shown = screen_text(app)
        assert "read 2× · last just now" in shown
        assert "src/app.py:1-1" in shown and "unchanged" in shown
        await pilot.press("r")
        await wait_until(
            pilot,
            lambda: (
                [r.title for r in browser.visible_rows]
                == sorted(["Build", "Layout", "Style"], key=lambda t: names[t])
            ),
            what="by name again",
        )


# -- "still true" -------------------------------------------------------------------------------


async def test_still_true_unmarks_the_card_in_a_manual_batch_that_undo_reverts(make_app, ws: Path) -> None:
    names = seed(ws)
    (ws / "Makefile").write_text("changed\n")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        assert panel_card(app, "Build").stale == CHANGED
        browser = await open_browser(pilot, app, 3)
        await select(pilot, browser, names["Build"])
        await pilot.press("c")
        await wait_until(pilot, lambda: panel_card(app, "Build").stale is None, what="the panel unmarked")
        await wait_until(
            pilot,
            lambda: next(r for r in browser.visible_rows if r.title == "Build").stale is None,
            what="the browser unmarked",
        )
        assert "confirmed project card" in browser.flash_text and "still true" in browser.flash_text
        last = MemoryStores(ws.resolve()).history()[-1]
        assert last.source == "manual" and "confirmed" in last.label
        assert [a.filename for a in last.applied] == [names["Build"]]

        await pilot.press("u")
        await wait_until(pilot, lambda: panel_card(app, "Build").stale == CHANGED, what="the mark back")


async def test_still_true_on_a_card_changed_since_listed_says_why_in_one_line(make_app, ws: Path) -> None:
    names = seed(ws)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_browser(pilot, app, 3)
        await select(pilot, browser, names["Build"])
        path = ws / ".PseudoClaude" / "memory" / names["Build"]
        path.write_bytes(path.read_bytes().replace(b"Build body.", b"Edited elsewhere."))
        count = len(MemoryStores(ws.resolve()).history())
        await pilot.press("c")
        await wait_until(pilot, lambda: browser.flash_text.startswith("not confirmed:"), what="the refusal")
        assert "\n" not in browser.flash_text and "changed since it was opened" in browser.flash_text
        assert len(MemoryStores(ws.resolve()).history()) == count


# -- the editor's citations -----------------------------------------------------------------------


def cites_block(path: Path) -> bytes:
    """The front matter's ``cites:`` list, as bytes."""
    data = path.read_bytes()
    start = data.index(b"cites:")
    end = data.index(b"\n", data.index(b"blob:", start))
    return data[start:end]


async def edit(pilot: Pilot[Any], app: PseudoClaudeApp, browser: CardBrowser, filename: str) -> CardEditor:
    await select(pilot, browser, filename)
    await pilot.press("e")
    await wait_until(pilot, lambda: isinstance(app.screen, CardEditor), what="the editor")
    editor = app.screen
    assert isinstance(editor, CardEditor)
    return editor


async def test_the_editor_keeps_citations_left_alone_and_replaces_changed_ones(make_app, ws: Path) -> None:
    names = seed(ws)
    card = ws / ".PseudoClaude" / "memory" / names["Build"]
    before = cites_block(card)
    # Stale before the edit: citations sent again would take the file's new content id.
    (ws / "Makefile").write_text("changed\n")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_browser(pilot, app, 3)
        editor = await edit(pilot, app, browser, names["Build"])
        cites = editor.query_one("#cites", Input)
        assert cites.value == "Makefile"
        summary = editor.query_one("#summary", Input)
        summary.value = "build notes, edited"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.screen is browser, what="saved")
        await wait_until(pilot, lambda: b"build notes, edited" in card.read_bytes(), what="the edit on disk")
        assert cites_block(card) == before  # left alone: byte for byte, still stale
        assert MemoryStores(ws.resolve()).grounding_of("project", names["Build"]).stale

        editor = await edit(pilot, app, browser, names["Build"])
        cites = editor.query_one("#cites", Input)
        cites.value = "src/app.py:1-1, ../outside"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.screen is browser, what="saved again")
        await wait_until(pilot, lambda: "dropped" in browser.flash_text, what="the dropped citation")
        meta = MemoryStores(ws.resolve()).read_note("project", names["Build"]).meta
        assert [c.spec for c in meta.cites] == ["src/app.py:1-1"]
        head, dropped = browser.flash_text.split("\n")
        assert head.startswith("saved project card") and "../outside" in dropped
        assert dropped.startswith("citation") and ": " in dropped

        editor = await edit(pilot, app, browser, names["Build"])
        editor.query_one("#cites", Input).value = ""
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.screen is browser, what="saved a third time")
        await wait_until(
            pilot,
            lambda: not MemoryStores(ws.resolve()).read_note("project", names["Build"]).meta.cites,
            what="the citations removed",
        )


async def test_ctrl_t_in_the_editor_confirms_the_card_as_it_is_on_disk(make_app, ws: Path) -> None:
    names = seed(ws)
    (ws / "Makefile").write_text("changed\n")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_browser(pilot, app, 3)
        editor = await edit(pilot, app, browser, names["Build"])
        # Unsaved changes: nothing is confirmed, the editor says why and stays.
        editor.query_one("#summary", Input).value = "not saved"
        count = len(MemoryStores(ws.resolve()).history())
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: "save your changes first" in screen_text(app), what="the refusal")
        assert app.screen is editor and len(MemoryStores(ws.resolve()).history()) == count
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is not editor, what="the discard question")
        await pilot.press("y")
        await wait_until(pilot, lambda: app.screen is browser, what="back in the browser")

        editor = await edit(pilot, app, browser, names["Build"])
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: app.screen is browser, what="the editor closed")
        await wait_until(pilot, lambda: panel_card(app, "Build").stale is None, what="the panel unmarked")
        assert "confirmed project card" in browser.flash_text
        last = MemoryStores(ws.resolve()).history()[-1]
        assert last.source == "manual" and [a.filename for a in last.applied] == [names["Build"]]
        assert MemoryStores(ws.resolve()).read_note("project", names["Build"]).meta.summary != "not saved"

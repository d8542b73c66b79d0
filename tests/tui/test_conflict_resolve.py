"""A conflicted card (git left conflict markers in it) in the running App's card browser:
listed and marked, previewed with both versions, refused by the keys that need a card, and
resolved in the resolution view (take ours, take theirs, or edit the merge in the card editor)
as ONE ``source: manual`` update that ``u`` undoes. Never in a prompt while conflicted.

Real stores, the real bridge and workers; one store made conflicted by real git (two clones edit
one card, ``git pull`` merges), the others by writing git's markers directly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Label, Static

from app.tui.app import PseudoClaudeApp
from memory.store.conflict import has_conflict
from memory.store.stores import MemoryStores
from tests.support.fakeapi import FakeAnthropic, text
from tests.support.gittools import clone, commit_all, git, git_run, new_repo
from tests.support.memtools import trust_workspace
from tests.tui.conftest import MEMORY_MODEL, MODEL, send, wait_ready, wait_until
from tests.tui.test_app_card_screens import open_cards, screen_lines, set_body
from widgets.cards.browser import CONFLICT_KEY_HINTS, CardBrowser
from widgets.cards.conflict import ConflictModal
from widgets.cards.editor import CardEditor
from widgets.cards.resolve import ResolveModal

SIZE = (140, 40)
OURS_WORD = "zebrafrob"  # only in our side's body
THEIRS_WORD = "quuxninja"  # only in theirs


def store_dir(ws: Path) -> Path:
    return ws / ".PseudoClaude" / "memory"


def side(title: str, body: str, summary: str = "how to build", extra: str = "") -> str:
    return (
        f"---\ntitle: {title}\nsummary: {summary}\ntype: project_knowledge\ncreated: 2026-01-01T00:00:00Z\n"
        f"updated: 2026-01-02T00:00:00Z\nsource: manual\n{extra}---\n{body}"
    )


def write_conflicted(
    ws: Path, name: str = "project_knowledge_build-steps.md", theirs_extra: str = ""
) -> Path:
    """A trusted project store with one other card and one card holding git's markers."""
    stores = MemoryStores(ws.resolve())
    assert (
        stores.create_card(
            "project", "project_knowledge", "Deploy with care", "deploys", "Deploy on Mondays."
        ).status
        == "applied"
    )
    path = store_dir(ws) / name
    ours = side("Build with make", f"Run make build ({OURS_WORD}).\n")
    theirs = side("Build with ninja", f"Run ninja ({THEIRS_WORD}).\n", "faster", theirs_extra)
    path.write_text(f"<<<<<<< HEAD\n{ours}=======\n{theirs}>>>>>>> feature\n")
    trust_workspace(ws)
    return path


def conflicted_by_git(tmp_path: Path) -> tuple[Path, Path]:
    """Ann's and Bob's clones both change one card; Ann pulls Bob's: the card is conflicted
    (MEMORY.md is not: it merges by union). Ann's work tree and the card's path in it."""
    ann = new_repo(tmp_path / "ann", "Ann")
    stores = MemoryStores(ann.resolve())
    made = stores.create_card(
        "project", "project_knowledge", "Build command", "how to build", "Run the build.\n"
    )
    assert made.status == "applied", made.reason
    commit_all(ann, "a card")
    bob = clone(ann, tmp_path / "bob", "Bob")
    git(ann, "remote", "add", "bob", str(bob))
    for repo, title, body in (
        (ann, "Build with make", f"Run make build ({OURS_WORD}).\n"),
        (bob, "Build with ninja", f"Run ninja ({THEIRS_WORD}).\n"),
    ):
        card = store_dir(repo) / made.filename
        card.write_text(card.read_text().replace("Build command", title).replace("Run the build.\n", body))
        commit_all(repo, f"{title}")
    merged = git_run(ann, "pull", "--no-rebase", "--no-edit", "bob", "main")
    assert merged.returncode != 0, merged.stdout  # the card conflicts...
    assert "MEMORY.md" not in git(ann, "diff", "--name-only", "--diff-filter=U")  # ...its index does not
    path = store_dir(ann) / made.filename
    assert has_conflict(path.read_text())
    return ann, path


async def resolve_view(
    pilot: Pilot[Any], app: PseudoClaudeApp, browser: CardBrowser, filename: str
) -> ResolveModal:
    browser.select("project", filename)
    await wait_until(pilot, lambda: browser.selected is not None and browser.selected.filename == filename)
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(app.screen, ResolveModal), what="the resolution view")
    modal = app.screen
    assert isinstance(modal, ResolveModal)
    return modal


def static_text(screen: Any, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


def history_len(ws: Path) -> int:
    return len(MemoryStores(ws.resolve()).history())


async def test_a_card_conflicted_by_git_is_marked_previewed_refused_and_take_theirs_resolves_it(
    make_app, tmp_path: Path
) -> None:
    ann, path = conflicted_by_git(tmp_path)
    raw = path.read_bytes()
    before = history_len(ann)
    app = make_app(workspace=ann)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 1)
        (row,) = browser.visible_rows
        assert row.conflict is not None and row.title == "Build with make" and not row.in_prompt
        await wait_until(
            pilot,
            lambda: any(
                "P conflicted Build with make — changed on two" in line for line in screen_lines(app)
            ),
            what="the row marked conflicted",
        )
        # The preview: both versions, each with git's label.
        await wait_until(pilot, lambda: browser.preview_row == row, what="the preview")
        meta = static_text(browser, "#cb-meta")
        assert "── ours · HEAD ──" in meta and "── theirs · " in meta
        assert "Build with ninja" in meta and OURS_WORD in meta and THEIRS_WORD in meta
        assert "<<<<<<<" not in meta and browser.key_hints == CONFLICT_KEY_HINTS
        # Pin, "still true" and move need a resolved card: one line, nothing written.
        for key, what in (("p", "pinned"), ("c", "confirmed"), ("m", "moved")):
            await pilot.press(key)
            await wait_until(
                pilot, lambda w=what: f"cannot be {w}" in browser.flash_text, what=f"{key} refused"
            )
        assert path.read_bytes() == raw and history_len(ann) == before

        modal = await resolve_view(pilot, app, browser, path.name)
        assert "Build with make" in static_text(modal, "#ours-pane-text")
        assert "Build with ninja" in static_text(modal, "#theirs-pane-text")
        assert modal.query_one("#theirs-pane").border_title is not None
        await pilot.press("t")
        await wait_until(pilot, lambda: not has_conflict(path.read_text()), what="the card resolved")
        await wait_until(pilot, lambda: "resolved project card" in browser.flash_text, what="the outcome")
        assert app.screen is browser

        stores = MemoryStores(ann.resolve())
        note = stores.read_note("project", path.name)
        assert note.conflict is None and not note.unparsed and note.meta.source == "manual"
        assert (note.meta.title, note.meta.summary, note.body) == (
            "Build with ninja",
            "how to build",
            f"Run ninja ({THEIRS_WORD}).\n",
        )
        assert "Build with ninja" in stores.merged_index() and history_len(ann) == before + 1
        await wait_until(
            pilot,
            lambda: (
                browser.visible_rows
                and browser.visible_rows[0].conflict is None
                and browser.visible_rows[0].in_prompt
            ),
            what="the row unmarked",
        )
        assert not any("conflicted" in line for line in screen_lines(app))

        # u: the conflicted file comes back exactly.
        await pilot.press("u")
        await wait_until(pilot, lambda: path.read_bytes() == raw, what="the undo")
        await wait_until(
            pilot,
            lambda: browser.visible_rows and browser.visible_rows[0].conflict is not None,
            what="marked again",
        )


async def test_edit_the_merge_refuses_the_unmerged_mark_then_saves_the_merge(make_app, ws: Path) -> None:
    path = write_conflicted(ws)
    before = history_len(ws)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 2)
        await resolve_view(pilot, app, browser, path.name)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, CardEditor), what="the editor on the merge")
        editor = app.screen
        assert isinstance(editor, CardEditor)
        draft = editor.draft()
        assert draft.title == "Build with make" and OURS_WORD in draft.body and THEIRS_WORD in draft.body
        assert "<<<<<<<" not in draft.body and "title: Build with ninja" in draft.body
        assert "Resolve project/" in str(editor.query_one("#heading", Static).content)
        # Saved as pre-filled: the other version's mark is still there, so nothing is written.
        await pilot.press("ctrl+s")
        await wait_until(
            pilot,
            lambda: "delete from its ▼▼▼ line down" in str(editor.query_one("#body-error", Label).content),
            what="the body refused",
        )
        assert has_conflict(path.read_text()) and history_len(ws) == before

        await set_body(pilot, editor, f"Run make build, or ninja ({OURS_WORD}, {THEIRS_WORD}).")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.screen is browser, what="the editor closed after saving")
        note = MemoryStores(ws.resolve()).read_note("project", path.name)
        assert note.conflict is None and note.meta.source == "manual" and note.meta.title == "Build with make"
        assert note.body == f"Run make build, or ninja ({OURS_WORD}, {THEIRS_WORD}).!\n"
        assert history_len(ws) == before + 1
        assert "Build with make" in MemoryStores(ws.resolve()).merged_index()
        await wait_until(pilot, lambda: "resolved project card" in browser.flash_text, what="the outcome")


async def test_take_ours_over_a_card_changed_again_meanwhile_shows_the_conflict_view(
    make_app, ws: Path
) -> None:
    path = write_conflicted(ws)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 2)
        await resolve_view(pilot, app, browser, path.name)
        changed = path.read_text().replace("faster", "faster still")
        path.write_text(changed)  # another checkout's merge, after the browser read it
        await pilot.press("o")
        await wait_until(pilot, lambda: isinstance(app.screen, ConflictModal), what="the conflict view")
        assert path.read_text() == changed
        await pilot.press("k")  # keep mine: ours, over what is on disk now
        await wait_until(pilot, lambda: not has_conflict(path.read_text()), what="saved over the change")
        note = MemoryStores(ws.resolve()).read_note("project", path.name)
        assert note.meta.title == "Build with make" and note.body == f"Run make build ({OURS_WORD}).\n"


async def test_a_conflicted_card_is_in_no_prompt_while_conflicted(
    make_app, ws: Path, server: FakeAnthropic
) -> None:
    path = write_conflicted(ws)
    server.script(MODEL, text("ok"))
    server.script(MEMORY_MODEL, text("[]"))
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 2)
        assert any(r.conflict is not None for r in browser.visible_rows)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, CardBrowser), what="back to the chat")
        await send(pilot, "how do I build?")
        await wait_until(pilot, lambda: len(server.requests_for(MODEL)) == 1, what="the request")
        sent = json.dumps(server.requests_for(MODEL)[0].body)
        assert "Deploy with care" in sent  # the other card is there...
        for word in ("Build with make", "Build with ninja", OURS_WORD, THEIRS_WORD, path.name):
            assert word not in sent, word  # ...the conflicted one is not, in any form


async def test_the_filter_finds_it_and_the_resolution_view_stacks_its_versions_at_80_columns(
    make_app, ws: Path
) -> None:
    path = write_conflicted(ws)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 2)
        # The filter finds it by either version's words (the search index holds the whole file).
        await pilot.press("slash", *THEIRS_WORD, "enter")
        await wait_until(
            pilot,
            lambda: [r.filename for r in browser.visible_rows] == [path.name] and browser.search is not None,
            what="found by theirs' word",
        )
        modal = await resolve_view(pilot, app, browser, path.name)
        ours, theirs = modal.query_one("#ours-pane"), modal.query_one("#theirs-pane")
        await wait_until(pilot, lambda: ours.region.height > 0 and theirs.region.height > 0)
        assert theirs.region.y > ours.region.y and theirs.region.x == ours.region.x
        drawn = "\n".join(screen_lines(app))
        assert "Take ours [o]" in drawn and "Take theirs [t]" in drawn and "Edit the merge [e]" in drawn
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is browser)
        assert has_conflict(path.read_text())


async def test_take_theirs_keeps_its_pin_as_a_second_batch_that_u_undoes_first(make_app, ws: Path) -> None:
    path = write_conflicted(ws, theirs_extra="pinned: true\n")
    raw = path.read_bytes()
    before = history_len(ws)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        browser = await open_cards(pilot, app, 2)
        await resolve_view(pilot, app, browser, path.name)
        await pilot.press("t")
        await wait_until(pilot, lambda: "resolved project card" in browser.flash_text, what="the outcome")
        note = MemoryStores(ws.resolve()).read_note("project", path.name)
        assert note.conflict is None and note.meta.pinned and note.meta.title == "Build with ninja"
        assert history_len(ws) == before + 2  # the update, then its pin (an update op carries none)
        await pilot.press("u")
        await wait_until(
            pilot,
            lambda: not MemoryStores(ws.resolve()).read_note("project", path.name).meta.pinned,
            what="the pin undone",
        )
        assert not has_conflict(path.read_text())
        await pilot.press("u")
        await wait_until(pilot, lambda: path.read_bytes() == raw, what="the resolution undone")

"""Memory in the app: the side panel after a job and after a hand edit, trust, quitting with a job
in flight."""

from __future__ import annotations

import os
from pathlib import Path

from app.tui.phase import Phase
from memory.jobs.spool import Spool
from memory.store.stores import MemoryStores
from tests.support.clitools import create_op, ops_answer, system_text
from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MEMORY_MODEL, MODEL, chat_texts, send, wait_ready, wait_until
from widgets.dialogs.trust_modal import TrustModal


def _titles(cards) -> list[str]:
    return [c.title for c in cards]


def _hand_write_card(folder: Path, filename: str, title: str, summary: str) -> None:
    """A card and its index line written as an editor or `git pull` would (not through the app)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / filename).write_text(
        f"---\ntitle: {title}\nsummary: {summary}\ntype: project_knowledge\ncreated: '2026-01-01T00:00:00Z'\n"
        f"updated: '2026-01-01T00:00:00Z'\nsource: manual\n---\nBody of {title}.\n"
    )
    index = folder / "MEMORY.md"
    old = index.read_text() if index.exists() else ""
    index.write_text(old + f"- [project_knowledge] {title} — {summary} ({filename})\n")


def _spooled(ws: Path) -> list[object]:
    stores = MemoryStores(ws)
    return Spool(stores.paths).list(ws, include_orphans=False)


async def test_the_side_panel_shows_a_card_marked_new_after_the_turns_job_applies(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, text("Use make build."))
    server.script(
        MEMORY_MODEL, text(ops_answer(create_op("Build with make", "Run make build.", summary="make build")))
    )
    app = make_app(server)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot)
        assert app.panel.state.project == () and app.panel.state.user == ()
        await send(pilot, "How do I build?")
        await wait_until(
            pilot, lambda: "Build with make" in _titles(app.panel.state.project), what="the new card"
        )
        [card] = app.panel.state.project
        assert card.new and card.summary == "make build"
        await wait_until(pilot, lambda: app.status_model.info.pending == 0 and not app.panel.state.jobs)
        # The session's cost counts the memory model's request too.
        assert set(app.chat_screen.cost.by_model) == {MODEL, MEMORY_MODEL}


async def test_the_side_panel_follows_a_hand_edit_on_disk(make_app, server: FakeAnthropic) -> None:
    app = make_app(server, memory_mode="off")
    user_store = Path(os.environ["PSEUDOCLAUDE_HOME"]) / "memory"
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: app.bridge.watcher_ready, what="the store watcher")
        _hand_write_card(user_store, "project_knowledge_tabs.md", "Tabs not spaces", "indent with tabs")
        await wait_until(
            pilot,
            lambda: "Tabs not spaces" in _titles(app.panel.state.user),
            timeout=5,
            what="the hand-written card in the panel",
        )


async def test_trusting_a_cloned_project_store_puts_its_cards_into_the_first_prompt(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    _hand_write_card(
        ws / ".PseudoClaude" / "memory", "project_knowledge_deploy.md", "Deploy on Fridays", "ok"
    )
    server.script(MODEL, text("noted"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, TrustModal) and app.screen.cards is not None,
            what="the trust modal's cards",
        )
        assert [c.title for c in app.screen.cards] == ["Deploy on Fridays"]
        await pilot.press("y")
        await wait_until(pilot, lambda: any("trusted" in t for t in chat_texts(app)))
        await wait_until(pilot, lambda: app.panel.state.project_note is None and app.panel.state.project)
        await send(pilot, "hello")
        await wait_until(pilot, lambda: "noted" in chat_texts(app))
        assert "Deploy on Fridays" in system_text(server.requests_for(MODEL)[0])


async def test_not_trusting_leaves_the_project_store_out_and_marks_it(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    _hand_write_card(
        ws / ".PseudoClaude" / "memory", "project_knowledge_deploy.md", "Deploy on Fridays", "ok"
    )
    server.script(MODEL, text("noted"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(140, 40)) as pilot:
        # Answered once the cards are listed: while they are read, no key answers the window.
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, TrustModal) and app.screen.cards is not None,
            what="the trust modal with its cards",
        )
        await pilot.press("n")
        await wait_until(pilot, lambda: any("not trusted" in t for t in chat_texts(app)))
        await wait_until(pilot, lambda: app.panel.state.project_note is not None)
        assert "untrusted" in app.panel.state.project_note and _titles(app.panel.state.project) == [
            "Deploy on Fridays"
        ]
        await send(pilot, "hello")
        await wait_until(pilot, lambda: "noted" in chat_texts(app))
        assert "Deploy on Fridays" not in system_text(server.requests_for(MODEL)[0])
    # "Not now": asked again at the next start.
    again = make_app(server, memory_mode="off")
    async with again.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(again.screen, TrustModal), what="the trust modal, again")


async def test_quit_with_a_job_in_flight_says_so_and_a_second_ctrl_q_leaves_it_spooled(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    held = server.gate("memory request held")
    server.script(MODEL, text("Answer."))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Kept for later", "body")), hold_before=held))
    app = make_app(server)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "remember something")
        await wait_until(pilot, lambda: held.reached, what="the memory request")
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: "saving 1 memory update" in app.status_model.info.note)
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running, what="the app to exit")
    assert len(_spooled(ws)) == 1
    assert not (ws / ".PseudoClaude" / "memory" / "project_knowledge_kept-for-later.md").exists()


async def test_ctrl_c_does_not_quit(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.screen.focus_next()  # away from the prompt, where Ctrl+C copies
        await pilot.press("ctrl+c")
        await pilot.press("ctrl+c")
        assert app.is_running and app.state.phase is not Phase.QUITTING


async def test_quit_with_nothing_in_flight_leaves_at_once_and_closes_the_session(
    make_app, server: FakeAnthropic
) -> None:
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        session = app.bridge.runtime.session
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running, what="the app to exit")
    assert session is not None and session.closed


def _status_row(app) -> str:
    return app.chat_screen.status_line.line(app.chat_screen.status_line.content_region.width).plain


async def test_with_the_panel_hidden_the_status_line_points_to_f2_and_counts_new_cards(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, text("Use make build."))
    server.script(
        MEMORY_MODEL, text(ops_answer(create_op("Build with make", "Run make build.", summary="make build")))
    )
    app = make_app(server)
    async with app.run_test(size=(80, 24)) as pilot:  # narrow: the panel starts hidden
        await wait_ready(pilot)
        assert not app.panel.display
        assert _status_row(app).endswith("F2 memory")  # nothing new before a Run
        await send(pilot, "How do I build?")
        await wait_until(pilot, lambda: "F2 memory · 1 new" in _status_row(app), what="the new-card hint")
        row = app.screen._compositor.render_strips()[-1].text
        assert "F2 memory · 1 new" in row and app.chat_screen.status_line.region.height == 1
        await pilot.press("f2")  # the panel shows the card itself: the hint goes
        await wait_until(pilot, lambda: app.panel.display and "F2" not in _status_row(app))
        await pilot.press("f2")
        await wait_until(pilot, lambda: "F2 memory · 1 new" in _status_row(app))

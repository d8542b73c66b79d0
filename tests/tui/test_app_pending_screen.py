"""The pending screen in the whole App: Pilot tests through the fake Messages API and
the real SDK, with the real memory manager, spool and stores underneath.

Covered: approving a held job op by op (exactly the approved ops written, the rest still held,
the session's applied row, the side panel, the history), rejecting the rest; a held update whose
card was edited by hand (its diff before, the conflict after, the hand edit kept byte for byte);
retrying a failed job (``t``) and dismissing one after reading its turn (``x``, ConfirmModal);
a job spooled by another window showing up live; an orphaned job dismissed; a retrying job's
attempt and countdown; and opening the screen from the side panel's jobs line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from app.tui.app import PseudoClaudeApp
from memory.constants import Action, Level, NoteType
from memory.jobs.spool import HeldOp, Spool, make_job
from memory.model import Operation, Turn, TurnMessage
from memory.store.stores import MemoryStores
from tests.support.clitools import create_op, ops_answer
from tests.support.fakeapi import FakeAnthropic, http_error, text
from tests.support.memtools import trust_workspace, write_note
from tests.tui.conftest import MEMORY_MODEL, MODEL, send, wait_ready, wait_until
from tests.unit.memory.jobs.test_manager import merge_answer
from widgets.dialogs.confirm import ConfirmModal
from widgets.panel.memory_panel import MemoryPanel
from widgets.pending.screen import PendingScreen

SIZE = (140, 40)


# -- helpers ------------------------------------------------------------------------------------


def project_dir(ws: Path) -> Path:
    return ws / ".PseudoClaude" / "memory"


def card_files(ws: Path) -> set[str]:
    folder = project_dir(ws)
    return {p.name for p in folder.glob("*.md") if p.name != "MEMORY.md"} if folder.is_dir() else set()


def flash_text(screen: PendingScreen) -> str:
    content: Any = screen.query_one("#flash", Static).content
    return str(getattr(content, "plain", content))


def section(rows: list[str], heading: str) -> list[str]:
    """The rows under ``heading`` (up to the next blank line)."""
    out: list[str] = []
    inside = False
    for row in rows:
        if row.startswith(heading):
            inside = True
            continue
        if inside:
            if not row.strip():
                break
            out.append(row)
    return out


def spool_of(ws: Path) -> Spool:
    return Spool(MemoryStores(ws.resolve()).paths)


def spooled_ids(ws: Path) -> set[str]:
    return {e.id for e in spool_of(ws).list(ws.resolve(), include_orphans=True)}


def turn(words: str) -> Turn:
    return Turn(messages=[TurnMessage(role="user", text=words), TurnMessage(role="assistant", text="Noted.")])


async def open_pending(pilot: Pilot[Any]) -> PendingScreen:
    app = pilot.app
    assert isinstance(app, PseudoClaudeApp)
    await send(pilot, "/pending")
    await wait_until(pilot, lambda: isinstance(app.screen, PendingScreen), what="the pending screen")
    screen = app.screen
    assert isinstance(screen, PendingScreen)
    return screen


async def select_row(pilot: Pilot[Any], screen: PendingScreen, predicate: Any, what: str) -> None:
    """Move the cursor with the arrow keys onto the first row whose text matches ``predicate``."""
    await wait_until(pilot, lambda: any(predicate(r) for r in screen.row_texts()), what=what)
    target = next(i for i, r in enumerate(screen.row_texts()) if predicate(r))
    await pilot.press("home")
    for _ in range(len(screen.row_texts())):
        cursor = screen._list.cursor
        if cursor == target:
            return
        await pilot.press("down" if cursor is None or cursor < target else "up")
    assert screen._list.cursor == target, f"could not select {what}"


# -- the tests ----------------------------------------------------------------------------------


async def test_a_held_job_approved_op_by_op_writes_exactly_the_approved_ops(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, text("Noted both."))
    server.script(
        MEMORY_MODEL,
        text(ops_answer(create_op("Alpha fact", "Alpha body."), create_op("Beta fact", "Beta body."))),
    )
    app = make_app(server, memory_mode="review")
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await send(pilot, "remember alpha and beta")
        await wait_until(
            pilot,
            lambda: any(j.line.startswith("held") for j in app.panel.state.jobs),
            what="the job held for review",
        )
        screen = await open_pending(pilot)
        await wait_until(
            pilot,
            lambda: screen.selected_job is not None and screen.selected_job.state == "held",
            what="the held job selected",
        )
        assert card_files(ws) == set()
        parent = screen.selected_job
        assert parent is not None
        await pilot.press("enter")
        await wait_until(pilot, lambda: parent.id in screen.expanded, what="the job expanded")
        await select_row(pilot, screen, lambda r: "[held]" in r and "Beta fact" in r, "the second op")
        assert screen.selected_op is not None and screen.selected_op.title == "Beta fact"

        await pilot.press("a")
        await wait_until(
            pilot, lambda: card_files(ws) == {"project_knowledge_beta-fact.md"}, what="only Beta written"
        )
        await wait_until(
            pilot,
            lambda: any(r.startswith("Applied this session") for r in screen.row_texts()),
            what="the applied row",
        )
        await wait_until(
            pilot,
            lambda: screen.selected_job is not None and screen.selected_job.state == "held",
            what="the rest still held and selected",
        )
        rest = screen.selected_job
        assert rest is not None and rest.id != parent.id and rest.split_from == parent.id
        assert [op.title for op in rest.ops if op.status == "held"] == ["Alpha fact"]
        applied = section(screen.row_texts(), "Applied this session")
        assert any("applied +1 ~0 −0" in r for r in applied), applied
        assert "wrote 1 change(s)" in flash_text(screen)
        await wait_until(
            pilot,
            lambda: "Beta fact" in [c.title for c in app.panel.state.project],
            what="the new card in the side panel",
        )
        assert "Alpha fact" not in [c.title for c in app.panel.state.project]
        history = app.bridge.stores.history()
        assert history[-1].label == f"approve {parent.id}"
        assert [a.filename for a in history[-1].applied] == ["project_knowledge_beta-fact.md"]

        # The remaining op, rejected: nothing more is written and the job leaves the Pending section.
        await select_row(pilot, screen, lambda r: "[held]" in r and "Alpha fact" in r, "the remaining op")
        await pilot.press("r")
        await wait_until(pilot, lambda: "rejected" in flash_text(screen), what="the rejection flash")
        assert "nothing written" in flash_text(screen)
        await wait_until(
            pilot,
            lambda: not any(r.startswith("Pending") for r in screen.row_texts()),
            what="the job gone from Pending",
        )
        assert rest.id not in spooled_ids(ws)
        assert card_files(ws) == {"project_knowledge_beta-fact.md"}
        assert app.bridge.stores.history()[-1].label == f"reject {rest.id}"


async def test_approving_an_update_whose_card_was_edited_by_hand_shows_the_conflict_and_keeps_the_edit(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    trust_workspace(ws)
    stores = MemoryStores(ws.resolve())
    card = write_note(stores, Level.PROJECT, "project_knowledge_build.md", "Build", "Use make.\n")
    server.script(MODEL, text("Noted: ninja."))
    update = {
        "action": "update",
        "level": "project",
        "filename": "project_knowledge_build.md",
        "content": "Use ninja.",
    }
    server.script(MEMORY_MODEL, text(ops_answer(update)), text(merge_answer({"op0": "Use ninja."})))
    app = make_app(server, memory_mode="review")
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await send(pilot, "we build with ninja now")
        await wait_until(
            pilot,
            lambda: any(j.line.startswith("held") for j in app.panel.state.jobs),
            what="the update held for review",
        )
        screen = await open_pending(pilot)
        await wait_until(
            pilot, lambda: screen.selected_job is not None and screen.selected_job.state == "held"
        )
        await pilot.press("enter")
        await select_row(pilot, screen, lambda r: "[held] update" in r, "the held update")
        detail = screen.detail_text()
        assert "-Use make." in detail.splitlines() and "+Use ninja." in detail.splitlines(), detail

        hand_edit = card.read_bytes().replace(b"Use make.", b"Use bazel (edited by hand).")
        card.write_bytes(hand_edit)
        await pilot.press("a")
        await wait_until(pilot, lambda: "conflict" in flash_text(screen), what="the conflict flash")
        flash = flash_text(screen)
        assert "not written" in flash and "changed" in flash, flash
        assert card.read_bytes() == hand_edit
        assert app.bridge.stores.history()[-1].conflicts[0].filename == "project_knowledge_build.md"


async def test_a_failed_job_is_retried_with_t_and_a_failed_job_is_dismissed_with_x_after_seeing_its_turn(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    down = [http_error(500, message="memory backend down") for _ in range(3)]
    server.script(MODEL, text("First answer."), text("Second answer."))
    server.script(MEMORY_MODEL, *down)
    app = make_app(server)  # auto mode
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await send(pilot, "first turn about gamma")
        await wait_until(
            pilot, lambda: any(j.failed for j in app.panel.state.jobs), what="the first job failed"
        )
        screen = await open_pending(pilot)
        await wait_until(
            pilot, lambda: screen.selected_job is not None and screen.selected_job.state == "failed"
        )
        first = screen.selected_job
        assert first is not None
        row = next(r for r in screen.row_texts() if "✗" in r)
        assert "failed: extract request failed" in row, row
        assert "memory backend down" in screen.detail_text()

        server.script(MEMORY_MODEL, text(ops_answer(create_op("Gamma fact", "Gamma body."))))
        await pilot.press("t")
        await wait_until(
            pilot, lambda: "project_knowledge_gamma-fact.md" in card_files(ws), what="the retried job's card"
        )
        await wait_until(
            pilot,
            lambda: any("applied +1" in r for r in section(screen.row_texts(), "Applied")),
            what="the applied row",
        )
        assert first.id not in spooled_ids(ws)

        # Another failed job: x asks (showing the turn), n keeps it, x then y dismisses it.
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, PendingScreen))
        server.script(MEMORY_MODEL, *[http_error(500, message="memory backend down") for _ in range(3)])
        await send(pilot, "second turn about delta")
        await wait_until(
            pilot, lambda: any(j.failed for j in app.panel.state.jobs), what="the second job failed"
        )
        screen = await open_pending(pilot)
        await select_row(pilot, screen, lambda r: "✗ failed" in r, "the failed job")
        second = screen.selected_job
        assert second is not None and second.state == "failed"
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the dismiss confirmation")
        modal = app.screen
        assert "second turn about delta" in " ".join(s.text for s in modal._compositor.render_strips())
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is screen)
        assert second.id in spooled_ids(ws)
        assert screen.selected_job is not None and screen.selected_job.id == second.id
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the confirmation, again")
        await pilot.press("y")
        await wait_until(pilot, lambda: second.id not in spooled_ids(ws), what="the job gone from the spool")
        await wait_until(pilot, lambda: f"dismissed job {second.id}" in flash_text(screen))
        await wait_until(pilot, lambda: not any(r.startswith("Pending") for r in screen.row_texts()))
        assert app.bridge.stores.history()[-1].label == f"dismiss {second.id}"


async def test_a_job_spooled_by_another_window_appears_on_the_open_pending_screen(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    app = make_app(server, memory_mode="review")
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = await open_pending(pilot)
        assert screen.state.jobs == ()
        job = make_job(ws.resolve(), [turn("the other window says epsilon")], mode="review")
        job.state = "held"
        job.held_ops = [
            HeldOp(
                index=0,
                op=Operation(
                    action=Action.CREATE,
                    level=Level.PROJECT,
                    type=NoteType.PROJECT_KNOWLEDGE,
                    title="Epsilon fact",
                    summary="from another window",
                    content="Epsilon body.",
                ),
            )
        ]
        spool_of(ws).submit(job)
        await wait_until(
            pilot,
            lambda: any("the other window says epsilon" in r for r in screen.row_texts()),
            what="the other window's job, without a key press",
        )
        await select_row(pilot, screen, lambda r: "the other window says epsilon" in r, "its job row")
        assert screen.selected_op is None and screen.selected_job is not None
        assert screen.selected_job.id == job.id and screen.selected_job.state == "held"
        await pilot.press("a")
        await wait_until(
            pilot, lambda: card_files(ws) == {"project_knowledge_epsilon-fact.md"}, what="its card"
        )
        assert job.id not in spooled_ids(ws)


async def test_an_orphaned_job_is_listed_and_can_be_dismissed(
    make_app, server: FakeAnthropic, ws: Path, tmp_path: Path
) -> None:
    gone = tmp_path / "deleted-workspace"
    job = make_job(gone, [turn("words from a workspace that is gone")])
    job.state = "failed"
    job.error = "extract request failed"
    spool = spool_of(ws)  # one spool for every workspace (under $PSEUDOCLAUDE_HOME)
    spool.submit(job)
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = await open_pending(pilot)
        await wait_until(
            pilot,
            lambda: any(r.startswith("Orphaned") for r in screen.row_texts()),
            what="the Orphaned section",
        )
        orphans = section(screen.row_texts(), "Orphaned")
        assert len(orphans) == 1 and "words from a workspace that is gone" in orphans[0], orphans
        await select_row(pilot, screen, lambda r: "words from a workspace that is gone" in r, "the orphan")
        assert screen.selected_job is not None and screen.selected_job.state == "orphaned"
        assert str(gone) in screen.detail_text()
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the dismiss confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: not spool.exists(job.id), what="the orphan gone from the spool")
        await wait_until(pilot, lambda: not any(r.startswith("Orphaned") for r in screen.row_texts()))


async def test_the_pending_screen_shows_retrying_with_its_attempt_and_next_try(
    make_app, server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker's first backoff is 1 s in units of the retry delay, and the job shows that wait as
    # its next try: 30 s, long enough to be read on the screen (the shown time is the one waited).
    app = make_app(server)
    monkeypatch.setenv("PSEUDOCLAUDE_RETRY_DELAY", "30")  # after make_app's 0: read when the runtime is built
    server.script(MODEL, text("Answer."))
    server.script(MEMORY_MODEL, http_error(500, message="memory backend down"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await send(pilot, "a turn whose memory request fails once")
        screen = await open_pending(pilot)
        await wait_until(
            pilot, lambda: any("↻ retrying" in r for r in screen.row_texts()), what="the retrying row"
        )
        row = next(r for r in screen.row_texts() if "↻ retrying" in r)
        assert re.search(r"↻ retrying 2/3 · next try in \d+s", row), row
        seconds = int(re.search(r"next try in (\d+)s", row).group(1))  # type: ignore[union-attr]
        assert 20 <= seconds <= 30, row
        assert "attempt: 2 of 3" in screen.detail_text()
        # The row and the detail give one count: the reason carries none of its own ("attempt 1 of 3").
        assert re.findall(r"(\d+) of 3", screen.detail_text()) == ["2"], screen.detail_text()
        assert len(server.requests_for(MEMORY_MODEL)) == 1  # still waiting: no second request yet
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: "saving 1 memory update" in app.status_model.info.note)
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running, what="the app to exit")
    assert len(spooled_ids(ws)) == 1  # left spooled for the next start


async def test_the_side_panels_jobs_line_opens_the_pending_screen_and_esc_returns_to_the_chat(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, text("Noted."))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Zeta fact", "Zeta body."))))
    app = make_app(server, memory_mode="review")
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await send(pilot, "remember zeta")
        await wait_until(
            pilot,
            lambda: any(j.line.startswith("held") for j in app.panel.state.jobs),
            what="the held job in the panel",
        )
        # From the prompt (/pending): Esc goes back to the chat with the prompt focused.
        await open_pending(pilot)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="back to the chat")
        await wait_until(pilot, lambda: app.focused is app.prompt, what="the prompt focused")

        # From the side panel: Enter on its jobs line.
        jobs_line = app.panel._jobs
        await wait_until(
            pilot, lambda: jobs_line.display and jobs_line.region.height > 0, what="the jobs line"
        )
        jobs_line.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PendingScreen), what="the pending screen")
        screen = app.screen
        assert isinstance(screen, PendingScreen)
        await wait_until(pilot, lambda: any("remember zeta" in r for r in screen.row_texts()))
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0], what="back to the chat")
        assert app.focused in (jobs_line, app.prompt), app.focused

        # The message itself (a click on the line posts the same) opens it too.
        app.panel.post_message(MemoryPanel.OpenPending())
        await wait_until(
            pilot, lambda: isinstance(app.screen, PendingScreen), what="the pending screen again"
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.screen_stack[0])


async def test_a_job_whose_only_op_was_rejected_is_listed_as_rejected_with_its_reason_not_as_applied(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, text("Noted."))
    no_content = {"action": "create", "level": "project", "type": "project_knowledge", "title": "Empty fact"}
    server.script(MEMORY_MODEL, text(ops_answer(no_content)))
    app = make_app(server)  # auto mode
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        await send(pilot, "remember nothing really")
        await wait_until(pilot, lambda: len(app.bridge.stores.history()) == 1, what="the job's batch")
        screen = await open_pending(pilot)
        await wait_until(
            pilot,
            lambda: any(r.startswith("Rejected this session") for r in screen.row_texts()),
            what="the Rejected section",
        )
        rows = section(screen.row_texts(), "Rejected this session")
        assert len(rows) == 1 and re.search(r"⊘ rejected: 1 op · op 0: \S", rows[0]), rows
        assert not any("applied +0" in r for r in screen.row_texts())
        assert not any(r.startswith("Applied this session") for r in screen.row_texts())
        reason = app.bridge.stores.history()[-1].rejected[0].reason
        await select_row(pilot, screen, lambda r: "⊘ rejected" in r, "the rejected job")
        detail = screen.detail_text()
        assert f"reason: {reason}" in detail.splitlines(), detail
        assert "turn: remember nothing really" in detail.splitlines()
        assert detail.startswith(f"⊘ rejected: 1 op · {reason}") and "applied +" not in detail
        assert card_files(ws) == set()


async def test_a_failed_job_retried_with_t_keeps_its_created_time_on_the_screen(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    created = "2026-01-01T00:00:00Z"
    job = make_job(ws.resolve(), [turn("an old turn about theta")])
    job.created = created
    job.state, job.error, job.error_kind = "failed", "extract request failed: down", "provider"
    spool_of(ws).submit(job)
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Theta fact", "Theta body."))))
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        screen = await open_pending(pilot)
        await select_row(
            pilot, screen, lambda r: "✗ failed" in r and "an old turn about theta" in r, "the failed job"
        )
        assert re.search(r" \d+d$", screen.row_texts()[screen._list.cursor or 0]), screen.row_texts()
        await pilot.press("t")
        await wait_until(
            pilot,
            lambda: any("applied +1" in r for r in section(screen.row_texts(), "Applied")),
            what="the applied row",
        )
        # Its age still counts from when it was spooled (days), not from the retry (seconds).
        (row,) = section(screen.row_texts(), "Applied")
        assert re.search(r" \d+d$", row), row
        await select_row(pilot, screen, lambda r: "applied +1" in r, "the applied job")
        assert re.search(rf"^created: \d+d ago · {created}$", screen.detail_text(), re.M), (
            screen.detail_text()
        )

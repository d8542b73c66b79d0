"""The automatic consolidation in the app: after ``consolidate_after`` new cards in a store, once a
turn has ended and no turn runs, the app makes one consolidation request to the memory model, its
operations held for review; no second one until as many new cards again; the count of new cards
survives a restart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory.jobs.spool import Spool
from memory.store.stores import MemoryStores
from tests.support.clitools import create_op, ops_answer, system_text
from tests.support.fakeapi import FakeAnthropic, Recorded, text
from tests.tui.conftest import MEMORY_MODEL, MODEL, chat_texts, send, wait_ready, wait_until

pytestmark = pytest.mark.timeout(240)

SIZE = (140, 40)
CONSOLIDATION = "You clean the long-term memory"
BODY = "This project uses pnpm for installs; npm breaks the pnpm lockfile."


def is_consolidation(req: Recorded) -> bool:
    return CONSOLIDATION in system_text(req)


def consolidation_requests(server: FakeAnthropic) -> list[Recorded]:
    return [r for r in server.requests_for(MEMORY_MODEL) if is_consolidation(r)]


def extraction(k: int) -> str:
    """The memory model's answer to turn ``k``: one more card saying the same thing (a duplicate)."""
    return ops_answer(
        {**create_op(f"Use pnpm, not npm ({k})", BODY, summary="pnpm, not npm"), "slug": f"pnpm-{k}"}
    )


def card(k: int) -> str:
    return f"project_knowledge_pnpm-{k}.md"


def merge_answer(keep: int, gone: list[int]) -> str:
    return json.dumps(
        [{"action": "update", "level": "project", "filename": card(keep), "content": "pnpm only."}]
        + [{"action": "delete", "level": "project", "filename": card(g)} for g in gone]
    )


def consolidations(ws: Path) -> list[Any]:
    spool = Spool(MemoryStores(ws).paths)
    return [
        e
        for e in spool.list(ws, include_orphans=False)
        if e.job is not None and e.job.purpose == "consolidate"
    ]


def checking(app: Any) -> bool:
    return any(w.group == "consolidate-auto" and not w.is_finished for w in app.workers)


async def one_turn(pilot: Any, app: Any, k: int) -> None:
    """A turn whose memory job creates one card; back once the card is in the panel."""
    await send(pilot, f"question {k}")
    await wait_until(pilot, lambda: f"answer {k}" in chat_texts(app), timeout=30, what=f"answer {k}")
    await wait_until(
        pilot,
        lambda: any(c.filename == card(k) for c in app.panel.state.project),
        timeout=30,
        what=f"card {k} in the panel",
    )
    await wait_until(
        pilot,
        lambda: not app.memory.scale.auto_due and not checking(app),
        timeout=30,
        what="the automatic check after the turn",
    )


async def test_three_new_cards_make_one_held_consolidation_and_the_count_survives_a_restart(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, *[text(f"answer {k}") for k in range(1, 7)])
    server.script(
        MEMORY_MODEL,
        *[text(extraction(k)) for k in (1, 2, 3)],
        text(merge_answer(1, [2, 3])),
        *[text(extraction(k)) for k in (4, 5, 6)],
        text("[]"),
    )
    app = make_app(server, consolidate_after=3)
    async with app.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        for k in (1, 2):
            await one_turn(pilot, app, k)
        assert consolidation_requests(server) == []
        # The third new card: the app asks for a consolidation once that turn is over.
        await one_turn(pilot, app, 3)
        await wait_until(
            pilot, lambda: consolidation_requests(server), timeout=30, what="the consolidation request"
        )
        await wait_until(
            pilot,
            lambda: any(j.line.startswith("held") for j in app.panel.state.jobs),
            timeout=30,
            what="the consolidation held for review",
        )
        store = MemoryStores(ws).project.dir
        assert (store / card(2)).exists(), "held: nothing applied before the review"
        [held] = consolidations(ws)
        await app.services.jobs.approve(held.id, None)
        await wait_until(
            pilot, lambda: not (store / card(2)).exists(), what="the approved consolidation applied"
        )
        # Two more new cards: not yet.
        for k in (4, 5):
            await one_turn(pilot, app, k)
        assert len(consolidation_requests(server)) == 1
    # A restart: the two new cards still count, the third makes the next consolidation.
    again = make_app(server, consolidate_after=3)
    async with again.run_test(size=SIZE) as pilot:
        await wait_ready(pilot)
        assert len(consolidation_requests(server)) == 1
        await one_turn(pilot, again, 6)
        await wait_until(
            pilot,
            lambda: len(consolidation_requests(server)) == 2,
            timeout=30,
            what="the second consolidation request",
        )

"""Trusting a cloned project store in the app makes it recallable and searchable in that same
session: the next turn's user message names a card beyond the prompt's index in its
``<memory-recall>`` block, and ``search_memory`` finds it. The store's search index is built in
the background right after the answer (no query needed), never on the event loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.constants import Level
from memory.store.stores import MemoryStores
from tests.support.clitools import result_text, tool_results
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.support.memtools import write_note
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.dialogs.trust_modal import TrustModal

pytestmark = pytest.mark.timeout(180)

SIZE = (140, 40)
LAB = "project_knowledge_zz-lab.md"


def seed_clone(ws: Path, n: int) -> MemoryStores:
    """``n`` filler cards and one lab card in a project store that came with a clone (untrusted)."""
    stores = MemoryStores(ws.resolve())
    for k in range(n):
        write_note(
            stores,
            Level.PROJECT,
            f"project_knowledge_fact-{k:05d}.md",
            f"Fact {k:05d}",
            f"Fact number {k}",
            summary=f"about fact {k}",
        )
    write_note(
        stores, Level.PROJECT, LAB, "Lab bench", "The frobnicator is calibrated weekly.", summary="hardware"
    )
    assert not stores.project_trusted
    return stores


def _recall_text(server: FakeAnthropic, i: int) -> str:
    last = server.requests_for(MODEL)[i].body["messages"][-1]["content"]
    return "".join(b.get("text", "") for b in last if b.get("text", "").startswith("<memory-recall>"))


async def test_trusting_a_cloned_store_makes_it_recalled_and_searched_in_the_same_session(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    stores = seed_clone(ws, 320)
    server.script(
        MODEL,
        text("calibrate it weekly"),
        tool_use("search_memory", {"query": "frobnicator"}),
        text("found it"),
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, TrustModal) and app.screen.cards is not None,
            timeout=30,
            what="the trust window's cards",
        )
        await pilot.press("y")
        await wait_until(
            pilot,
            lambda: any("project memory trusted" in t for t in chat_texts(app)),
            timeout=30,
            what="the trust note",
        )
        await wait_ready(pilot)
        # The lab card is beyond the prompt's index: only recall or search can bring it.
        assert f"project/{LAB}" in stores.prompt_index().left_out
        runtime = app.bridge.require()
        # Built in the background after the answer, before any question asked for it.
        await wait_until(
            pilot,
            lambda: runtime.search.cache(Level.PROJECT).ready_within(0),
            timeout=60,
            what="the trusted store's search index built",
        )
        await send(pilot, "How do I calibrate the frobnicator?")
        await wait_until(
            pilot, lambda: "calibrate it weekly" in chat_texts(app), timeout=30, what="the answer"
        )
        recall = _recall_text(server, 0)
        assert f"({LAB})" in recall, recall
        await send(pilot, "Look it up in memory.")
        await wait_until(pilot, lambda: "found it" in chat_texts(app), timeout=30, what="the second answer")
        [found] = tool_results(server.requests_for(MODEL)[2])
        assert result_text(found).split("\n")[0].startswith("project: - [project_knowledge] Lab bench"), found

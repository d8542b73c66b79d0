"""No full garbage collection runs while an answer streams in the App (app/tui/chat/gc_hold.py): the
objects alive before the first answer are frozen, and what survives to the old generation waits."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from app.tui.chat import gc_hold
from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MODEL, send, wait_ready, wait_until
from widgets.chat.answer_block import AnswerBlock


async def test_no_full_collection_runs_while_an_answer_streams(
    make_app,
    server: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A fresh process for gc_hold: its freeze is once per process, and another test of this
    # worker process may have frozen and unfrozen already (test_watchdog does).
    monkeypatch.setattr(gc_hold, "_frozen", False)
    gate = server.gate()
    server.script(
        MODEL, text("First words, then more.", chunks=["First words, ", "then more."], hold_after=gate)
    )
    app = make_app(server, memory_mode="off")
    full: list[int] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "go")
        try:
            await wait_until(
                pilot,
                lambda: gate.reached and any(a.shown_text for a in app.query(AnswerBlock)),
                what="the answer streaming, the rest of it held",
            )
            assert gc.get_freeze_count() > 0  # the start-up objects: no full collection walks them
            gc.callbacks.append(on_gc)
            try:
                # Survivors enough to set off several full collections on the collector's own schedule.
                kept = [[i] for i in range(400_000)]
                await pilot.pause()
            finally:
                gc.callbacks.remove(on_gc)
            assert len(kept) == 400_000
            assert full == []
        finally:
            gate.release()
        await wait_until(
            pilot, lambda: all(a.finished for a in app.query(AnswerBlock)), what="the answer's end"
        )

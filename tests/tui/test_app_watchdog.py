"""The App never blocks its event loop on the disk (the hardening issue's watchdog, run against the App).

A whole turn through the UI — prompt, streamed answer, a tool call, the memory job applying, the side
panel refreshing — with every memory.fs call slowed by 200 ms: no memory.fs call may run on the loop.
"""

from __future__ import annotations

from pathlib import Path

import anthropic  # noqa: F401  # imported up front: a first import on the loop is not the code's stall
import pytest

from memory.store.fs import FS
from tests.integration.agent.test_watchdog import SlowFS, Watchdog
from tests.support.clitools import create_op, ops_answer
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.conftest import MEMORY_MODEL, MODEL, chat_texts, send, wait_ready, wait_until

pytestmark = pytest.mark.timeout(180)

# Every store call made on the loop is named by SlowFS (the exact check). The App's own frames
# (layout, Markdown) are CPU work that a busy CI core can stretch: callbacks are bounded loosely,
# to catch a gross stall of any other kind (a subprocess, a lock) without flaking.
SLOW_FS = 0.1
FRAME_LIMIT = 0.25


async def test_a_turn_in_the_app_never_runs_store_io_on_the_event_loop(
    make_app, server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script(
        MODEL,
        tool_use("read_memory", {"level": "user", "filename": "MEMORY.md"}),
        text("Noted: releases are cut on Fridays."),
    )
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Release day", "Releases are cut on Fridays."))))
    slow = SlowFS(delay=SLOW_FS)
    app = make_app(server, fs=FS(slow))
    async with app.run_test(size=(140, 40)) as pilot:
        watchdog = Watchdog(monkeypatch)
        await wait_ready(pilot, timeout=60)
        await send(pilot, "we cut releases on Fridays")
        await wait_until(pilot, lambda: "Noted: releases are cut on Fridays." in chat_texts(app), timeout=60)
        await wait_until(
            pilot, lambda: any(c.title == "Release day" for c in app.panel.state.project), timeout=60
        )
        watchdog.stop()
    print(f"watchdog: {watchdog.count} callbacks, longest {watchdog.longest * 1000:.1f} ms")
    assert slow.calls > 10, "the slowed layer was really used"
    assert slow.on_loop == [], "memory.fs calls made on the event loop:\n" + "\n".join(slow.on_loop)
    assert watchdog.count > 100
    stalls = [s for s in watchdog.slow if s[0] > FRAME_LIMIT]
    assert stalls == [], "loop callbacks longer than 250 ms:\n" + "\n".join(map(str, stalls))

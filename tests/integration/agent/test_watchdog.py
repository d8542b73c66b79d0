"""Nothing blocks the event loop: a whole turn with memory on, every memory.fs call
slowed by 200 ms, while a watchdog measures every callback the loop runs.

The full-screen app runs the Runner and the Manager on Textual's loop: a file operation, lock,
fsync or directory walk run *on* the loop would freeze the screen for as long as it takes.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import traceback
from pathlib import Path

import anthropic  # noqa: F401  # imported up front: a first import inside the loop is not the code's stall
import pytest

from app.agent.config.settings import load_settings
from app.agent.runtime import Runtime
from memory.store.fs import FS
from tests.support.clitools import MEMORY_MODEL, MODEL, create_op, ops_answer
from tests.support.fakeapi import FakeAnthropic, text, tool_use

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("sdk_env")]

SLOW_FS = 0.2  # seconds added to every memory.fs call
LIMIT = 0.05  # the longest a loop callback may run


class Watchdog:
    """Times every callback the event loop runs (asyncio.Handle._run: tasks' steps included).

    Chosen over asyncio's debug mode, whose own bookkeeping (a stack captured for every handle)
    makes ordinary callbacks look slow.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.slow: list[tuple[float, float, str]] = []
        self.active = True
        self.count = 0
        self.longest = 0.0
        original = asyncio.events.Handle._run
        watchdog = self

        def timed_run(handle: asyncio.events.Handle) -> None:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                original(handle)
            finally:
                if watchdog.active:
                    watchdog._record(handle, time.perf_counter() - wall, time.thread_time() - cpu)

        monkeypatch.setattr(asyncio.events.Handle, "_run", timed_run)
        # A full collection over the whole test process (every module the suite imported) can
        # take longer than the limit by itself: the objects that exist now are left out of it,
        # so what is measured is the code under test.
        gc.collect()
        gc.freeze()

    def _record(self, handle: asyncio.events.Handle, took: float, cpu: float) -> None:
        self.count += 1
        self.longest = max(self.longest, took)
        if took > LIMIT:
            self.slow.append((took, cpu, repr(handle)[:300]))

    def stop(self) -> None:
        """The test's own checks after the turn run in the same callback: they are not timed."""
        self.active = False
        gc.unfreeze()

    def report(self) -> str:
        return "\n".join(f"{w * 1000:.0f} ms (cpu {c * 1000:.0f} ms): {what}" for w, c, what in self.slow)


class SlowFS:
    """The FS hook: every memory.fs call takes ``delay`` more; calls made on the loop are named."""

    def __init__(self, delay: float = SLOW_FS) -> None:
        self.delay = delay
        self.loop_thread = threading.get_ident()
        self.on_loop: list[str] = []
        self.calls = 0

    def __call__(self, op: str, path: str) -> None:
        self.calls += 1
        if threading.get_ident() == self.loop_thread:
            # Name the caller, so a failure says which call still blocks.
            frames = [f for f in traceback.extract_stack()[:-1] if "/memory/store/fs.py" not in f.filename]
            where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames[-4:][::-1])
            self.on_loop.append(f"{op} {Path(path).name}: {where}")
        time.sleep(self.delay)


async def warm_up(server: FakeAnthropic, ws: Path) -> None:
    """One turn, unmeasured, at normal speed. The SDK builds its pydantic validators the first
    time each response type is seen in a process (a one-time cost of tens of ms of CPU): that
    is library start-up, not a blocking call of ours, and it is paid before measuring."""
    server.script(MODEL, tool_use("list_files", {}), text("warm"))
    server.script(MEMORY_MODEL, text("[]"))
    rt = Runtime(load_settings({"memory_mode": "auto"}), ws)
    await rt.open_session()
    stop = await rt.runner.run("warm up")
    assert stop.job_id is not None and await rt.manager.wait_for(stop.job_id, 60)
    await rt.close(timeout=10)


async def test_a_whole_turn_with_memory_never_blocks_the_loop_even_with_slow_disks(
    server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await warm_up(server, ws)
    slow = SlowFS()
    server.script(
        MODEL,
        tool_use("read_memory", {"level": "project", "filename": "MEMORY.md"}),
        text("Noted: releases are cut on Fridays."),
    )
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Release day", "Releases are cut on Fridays."))))

    rt = Runtime(load_settings({"memory_mode": "auto"}), ws, fs=FS(slow))
    watchdog = Watchdog(monkeypatch)
    await rt.open_session()
    stop = await rt.runner.run("we cut releases on Fridays")
    assert stop.status == "completed", stop.message
    assert stop.job_id is not None
    assert await rt.manager.wait_for(stop.job_id, 120)
    await rt.close(timeout=60)
    watchdog.stop()
    monkeypatch.undo()
    print(f"watchdog: {watchdog.count} callbacks, longest {watchdog.longest * 1000:.1f} ms")
    assert (ws / ".PseudoClaude" / "memory" / "project_knowledge_release-day.md").exists()
    assert slow.calls > 10, "the slowed layer was really used"
    assert slow.on_loop == [], "memory.fs calls made on the event loop:\n" + "\n".join(slow.on_loop)
    assert watchdog.count > 100, "the watchdog saw the loop run"
    assert watchdog.slow == [], "loop callbacks longer than 50 ms:\n" + watchdog.report()


async def test_review_clear_and_mode_switch_never_block_the_loop_either(
    server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await warm_up(server, ws)
    # Slowed past the limit all the same (a call on the loop would show), at less cost in time.
    slow = SlowFS(delay=LIMIT * 1.5)
    server.script(MODEL, text("Held for review."), text("After /clear."))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Reviewed note", "Approved by a person."))))
    rt = Runtime(load_settings({"memory_mode": "review"}), ws, fs=FS(slow))
    watchdog = Watchdog(monkeypatch)
    await rt.open_session()
    stop = await rt.runner.run("remember this after review")
    assert stop.job_id is not None and await rt.manager.wait_for(stop.job_id, 120)
    [view] = [j for j in await rt.manager.jobs() if j.state == "held"]
    await rt.manager.approve(view.id)
    await rt.set_memory_mode("off")
    await rt.new_session()
    assert "Reviewed note" in str(rt.runner.system)
    assert (await rt.runner.run("and now")).status == "completed"
    await rt.close(timeout=60)
    watchdog.stop()
    monkeypatch.undo()
    print(f"watchdog: {watchdog.count} callbacks, longest {watchdog.longest * 1000:.1f} ms")
    assert slow.on_loop == [], "memory.fs calls made on the event loop:\n" + "\n".join(slow.on_loop)
    assert watchdog.slow == [], "loop callbacks longer than 50 ms:\n" + watchdog.report()

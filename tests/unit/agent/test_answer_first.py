"""Issue 20: a completed turn's job is spooled only once the face shows the answer's end (the
Runner's ``answer_shown`` hook, bounded), and a hook that fails, is cancelled or hangs never
loses the job. The real SDK against the fake Messages API, the real spool."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.agent.config.settings import load_settings
from app.agent.runtime import Runtime
from app.agent.turn.events import MemorySubmitted, RunStop
from app.agent.turn.runner import Runner
from tests.support.clitools import MODEL
from tests.support.fakeapi import FakeAnthropic, text

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def runtime(server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Runtime]:
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    # No worker: the job stays in the spool, where the test looks for it.
    rt = Runtime(load_settings({"memory_wait": 0}), ws)
    await rt.open_session()
    yield rt
    await rt.close()


def _spooled(rt: Runtime) -> list[str]:
    return rt.manager.spool.ids()


async def test_the_job_is_spooled_after_the_hook_is_done_and_before_the_stop(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(MODEL, text("the answer"))
    called, release = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def answer_shown() -> None:
        order.append("shown")
        called.set()
        await release.wait()

    def on_event(ev: object) -> None:
        if isinstance(ev, MemorySubmitted | RunStop):
            order.append(type(ev).__name__)

    run = asyncio.create_task(runtime.runner.run("hi", on_event, answer_shown=answer_shown))
    await asyncio.wait_for(called.wait(), 20)
    assert _spooled(runtime) == [], "spooled while the answer's end was not shown yet"
    release.set()
    stop = await asyncio.wait_for(run, 20)
    assert stop.status == "completed" and stop.job_id in _spooled(runtime)
    assert order == ["shown", "MemorySubmitted", "RunStop"]


async def test_a_hook_that_raises_still_spools_the_job(server: FakeAnthropic, runtime: Runtime) -> None:
    server.script(MODEL, text("the answer"))

    async def answer_shown() -> None:
        raise RuntimeError("the face broke")

    stop = await runtime.runner.run("hi", answer_shown=answer_shown)
    assert stop.status == "completed" and stop.job_id in _spooled(runtime)


async def test_a_hook_that_cancels_itself_still_spools_the_job(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(MODEL, text("the answer"))

    async def answer_shown() -> None:
        raise asyncio.CancelledError

    stop = await runtime.runner.run("hi", answer_shown=answer_shown)
    assert stop.status == "completed" and stop.job_id in _spooled(runtime)


async def test_a_hook_that_hangs_is_given_up_on_and_the_job_is_spooled(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(MODEL, text("the answer"))
    runtime.runner.answer_shown_s = 0.05
    hung = asyncio.Event()
    left: list[bool] = []

    async def answer_shown() -> None:
        try:
            await hung.wait()  # never set
        finally:
            left.append(True)

    stop = await asyncio.wait_for(runtime.runner.run("hi", answer_shown=answer_shown), 20)
    assert stop.status == "completed" and stop.job_id in _spooled(runtime)
    assert left == [True], "the hung hook was not cancelled"


def test_the_wait_is_bounded_by_half_a_second() -> None:
    assert 0 < Runner.answer_shown_s <= 0.5

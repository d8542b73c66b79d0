"""A cancel (Esc, Ctrl+C) that comes while a whole answer's turn is committing (its memory job
being spooled, the turn being closed) waits for the commit and is then spent: the turn ends once,
completed, with its job. Before, it ended the turn as cancelled with the job spooled anyway, or
closed it twice. The real SDK against the fake Messages API, the real spool and session file."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.agent.runtime import Runtime
from app.agent.turn.events import MemorySubmitted, RunStop, run_whole
from tests.support.clitools import MODEL
from tests.support.fakeapi import FakeAnthropic, text

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def runtime(server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Runtime]:
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    rt = Runtime(load_settings({"memory_wait": 0}), ws)  # no worker: the job stays spooled
    await rt.open_session()
    yield rt
    await rt.close()


def _turn_ends(rt: Runtime) -> list[dict[str, Any]]:
    session = rt.runner.session
    assert session is not None
    records = [json.loads(line) for line in session.path.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("type") == "turn_end"]


@pytest.mark.parametrize("cancels", [1, 2])
async def test_a_cancel_while_the_job_is_spooled_keeps_the_completed_turn_and_its_job(
    server: FakeAnthropic, runtime: Runtime, monkeypatch: pytest.MonkeyPatch, cancels: int
) -> None:
    server.script(MODEL, text("the whole answer"))
    manager = runtime.manager
    real_submit = manager.submit
    spooling, release = asyncio.Event(), asyncio.Event()

    async def held_submit(turn: Any) -> Any:
        spooling.set()
        await release.wait()  # the barrier: the cancel comes while the job is being spooled
        return await real_submit(turn)

    monkeypatch.setattr(manager, "submit", held_submit)
    events: list[object] = []
    run = asyncio.create_task(runtime.runner.run("hi", events.append))
    await asyncio.wait_for(spooling.wait(), 20)
    for _ in range(cancels):
        run.cancel()
        await asyncio.sleep(0)  # let each cancel land in the waiting run before the next
    release.set()
    stop = await asyncio.wait_for(run, 20)
    assert not run.cancelled() and run.cancelling() == 0
    assert stop.status == "completed" and stop.job_id in manager.spool.ids()
    assert [e.status for e in events if isinstance(e, RunStop)] == ["completed"]
    assert any(isinstance(e, MemorySubmitted) for e in events)
    ends = _turn_ends(runtime)
    assert [e["status"] for e in ends] == ["completed"], ends
    # The conversation is whole and the next turn goes on from it.
    server.script(MODEL, text("next"))
    again = await runtime.runner.run("and then?")
    assert again.status == "completed"


async def test_run_whole_raises_when_the_step_itself_is_cancelled() -> None:
    async def step() -> int:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await run_whole(step())


async def test_run_whole_spends_only_the_cancels_that_came_while_it_waited() -> None:
    gate = asyncio.Event()

    async def step() -> str:
        await gate.wait()
        return "done"

    async def caller() -> tuple[str, int]:
        result = await run_whole(step())
        current = asyncio.current_task()
        assert current is not None
        return result, current.cancelling()

    task = asyncio.create_task(caller())
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.wait_for(task, 5) == ("done", 0)

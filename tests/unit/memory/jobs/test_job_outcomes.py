"""A job another process ran reaches this manager's subscribers exactly once: as the outcome that
process reported (``Manager.announce``, the worker child's line), or, when that report never came
(the child was killed between its commit and its line), from this manager's look at the spool and
the history. Whichever comes first is announced; the other never is.

Two managers of one workspace stand for the app and its worker child: ``app`` runs no job
(``runs_jobs=False``), ``child`` runs them, and its ``on_outcome`` is the line on the pipe.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memory.constants import MemoryMode
from memory.events import JobApplied, JobFailed, JobHeld, MemoryEvent
from memory.extract.completion import CompletionError
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env
from tests.unit.memory.jobs.test_manager import Script, answer, create, manager, turn

pytestmark = pytest.mark.timeout(60)

POLLS = 6  # the app's looks at the spool waited for after an outcome: none may announce it again


class Pair:
    """The app's manager is never started: it looks at the spool only when a test says ``polls``."""

    def __init__(self, env: MemoryStores, script: Script, **kw: Any) -> None:
        self.app = manager(env, None, runs_jobs=False, **kw)
        self.child = manager(MemoryStores(env.paths.workspace, env.paths.home, clock=env.clock), script, **kw)
        self.events: list[MemoryEvent] = []
        self.app.subscribe(self.events.append)
        self.reported: list[MemoryEvent] = []  # the child's lines, as it wrote them

    def of(self, job_id: str, kind: type) -> list[MemoryEvent]:
        return [e for e in self.events if isinstance(e, kind) and getattr(e, "job_id", None) == job_id]

    async def polls(self, n: int = POLLS) -> None:
        for _ in range(n):
            await self.app.tick()


async def _until(pred: object, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():  # type: ignore[operator]
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[Pair]:
    env = make_env(tmp_path)
    script = Script(default=answer(create("Build with make", "Run make.")))
    p = Pair(env, script)
    yield p
    await p.child.close(2)
    await p.app.close(2)


async def _submit_and_run(p: Pair, text: str = "we build with make") -> str:
    job = await p.app.submit(turn(text))
    assert job is not None
    await p.app.tick()  # the app has seen its job spooled before the child takes it
    await p.child.start()
    p.child.signal(wake=True)
    await _until(lambda: not p.child.spool.path(job.id).exists() and p.child.worker.active == frozenset())
    return job.id


async def test_a_job_the_child_applied_and_reported_is_announced_once(pair: Pair) -> None:
    pair.child.on_outcome = pair.app.announce  # the line on the pipe
    job_id = await _submit_and_run(pair)
    await pair.polls()
    [applied] = pair.of(job_id, JobApplied)
    assert (
        isinstance(applied, JobApplied)
        and applied.txid
        and [a.filename for a in applied.applied] == ["project_knowledge_build-with-make.md"]
    )
    assert applied.created  # the same event as the child's own, spool time included
    pair.app.announce(applied)  # the same line again (a replay) is no news either
    assert len(pair.of(job_id, JobApplied)) == 1


async def test_a_job_whose_line_was_lost_is_announced_once_by_the_look_at_the_spool(pair: Pair) -> None:
    pair.child.on_outcome = pair.reported.append  # written, never read: the child died before it
    job_id = await _submit_and_run(pair)
    await pair.polls()
    [applied] = pair.of(job_id, JobApplied)
    assert isinstance(applied, JobApplied) and len(applied.applied) == 1  # read from the history
    # The line that arrives after all (read late) is not a second announcement.
    [line] = [e for e in pair.reported if isinstance(e, JobApplied)]
    pair.app.announce(line)
    await pair.polls(2)
    assert len(pair.of(job_id, JobApplied)) == 1


async def test_a_line_read_after_the_look_at_the_spool_began_is_the_one_announcement(pair: Pair) -> None:
    # The child commits, the app's look lists the spool (the job is gone) and reads the history in
    # a thread; the child's line arrives meanwhile: it is announced, the look's finding is not.
    pair.child.on_outcome = pair.reported.append
    job_id = await _submit_and_run(pair)
    real = pair.app.watch.report_gone

    def report_gone_after_the_line(gone: list[str]) -> list[MemoryEvent]:
        found = real(gone)
        for e in pair.reported:
            pair.app.announce(e)  # as the reader's thread would, before the look emits its finding
        return found

    pair.app.watch.report_gone = report_gone_after_the_line  # type: ignore[method-assign]
    await pair.app.tick()
    await asyncio.sleep(0.05)
    pair.app.watch.report_gone = real  # type: ignore[method-assign]
    await pair.polls()
    assert len(pair.of(job_id, JobApplied)) == 1


async def test_a_failure_the_child_reported_is_announced_once(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    p = Pair(env, Script(default=CompletionError("401 unauthorized", retryable=False)))
    p.child.on_outcome = p.app.announce
    try:
        job = await p.app.submit(turn("we build with make"))
        assert job is not None
        await p.app.tick()
        await p.child.start()
        p.child.signal(wake=True)
        await _until(lambda: bool(p.of(job.id, JobFailed)))
        await p.polls()
        [failed] = p.of(job.id, JobFailed)
        assert isinstance(failed, JobFailed) and "401" in failed.reason and failed.retryable is False
    finally:
        await p.child.close(2)
        await p.app.close(2)


async def test_a_held_job_the_look_saw_first_is_not_announced_again_by_the_line(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    p = Pair(env, Script(default=answer(create("Build with make", "Run make."))), mode=MemoryMode.REVIEW)
    p.child.on_outcome = p.reported.append
    try:
        job = await p.app.submit(turn("we build with make"))
        assert job is not None
        await p.app.tick()
        await p.child.start()
        p.child.signal(wake=True)
        await _until(lambda: any(isinstance(e, JobHeld) for e in p.reported))
        await p.polls()
        assert len(p.of(job.id, JobHeld)) == 1
        for e in p.reported:
            p.app.announce(e)
        await p.polls()
        assert len(p.of(job.id, JobHeld)) == 1
    finally:
        await p.child.close(2)
        await p.app.close(2)

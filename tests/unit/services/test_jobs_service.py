"""The jobs service (app/services/jobs.py) over a real manager and stores, with the scripted
memory model of the manager's tests and no terminal: a held job's ops come with the card each
changes, approving some writes exactly those and leaves the rest held, rejecting writes nothing
and says what is still held, a failed job is retried, or its turn read and it dismissed, and consolidation
outcomes come back as plain data."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.services.jobs import Consolidation, JobsService
from memory.constants import Level, MemoryMode
from memory.jobs.manager import Manager
from memory.jobs.spool import make_job
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env, write_note
from tests.unit.memory.jobs.test_manager import Script, answer, create, manager, notes, turn

pytestmark = [pytest.mark.plain_ws, pytest.mark.timeout(60)]

OLD = "project_knowledge_deploy.md"


@pytest.fixture
def env(tmp_path: Path) -> MemoryStores:
    stores = make_env(tmp_path)
    write_note(stores, Level.PROJECT, OLD, "Deploy", "deploy from main", summary="how to deploy")
    return stores


def update(filename: str, content: str) -> dict[str, str]:
    return {"action": "update", "level": "project", "filename": filename, "content": content}


def merged(content: str) -> str:
    return json.dumps({"merged": [{"key": "op1", "content": content}]})


@pytest.fixture
async def held(env: MemoryStores) -> AsyncIterator[tuple[Manager, str]]:
    """A manager in review mode with one held job: op 0 creates "Build", op 1 updates OLD."""
    script = Script(
        answer(create("Build", "run make"), update(OLD, "deploy from the tag")), merged("deploy from the tag")
    )
    m = manager(env, script, mode="review")
    await m.start()
    job = await m.submit(turn("how do we build and deploy?"))
    assert job is not None
    assert (await m.wait_for(job.id, 10)).status == "held"
    yield m, job.id
    await m.close(1)


async def test_a_held_jobs_ops_come_with_the_card_each_changes(
    env: MemoryStores, held: tuple[Manager, str]
) -> None:
    m, job_id = held
    jobs = JobsService(m, env, lambda: MemoryMode.REVIEW)
    pending = await jobs.pending()
    assert pending.mode == "review" and pending.orphans == ()
    (job,) = pending.jobs
    assert (job.id, job.state, job.title) == (job_id, "held", "")
    assert "how do we build" in job.excerpt and job.created
    new, change = job.ops
    assert (new.index, new.action, new.status, new.title, new.filename) == (0, "create", "held", "Build", "")
    assert new.before is None and new.after is not None and new.after.startswith("title: Build\n")
    assert "run make" in new.after
    assert (change.index, change.action, change.filename) == (1, "update", OLD)
    assert change.before is not None and change.before.startswith("title: Deploy\nsummary: how to deploy\n")
    assert change.before.endswith("deploy from main\n")
    assert change.after is not None and change.after.endswith("deploy from the tag")
    assert change.title == "Deploy"  # an update that leaves the title keeps the card's
    # Listing keeps each job's excerpt: a job applied later is named by its turn.
    assert jobs.excerpt(job_id) == ""
    await jobs.jobs()
    assert jobs.excerpt(job_id) == job.excerpt
    assert await jobs.in_flight() == 0  # held is waiting for the person, not in flight


async def test_approving_some_ops_writes_exactly_those_and_leaves_the_rest_held(
    env: MemoryStores, held: tuple[Manager, str]
) -> None:
    m, job_id = held
    jobs = JobsService(m, env, lambda: MemoryMode.REVIEW)
    result = await jobs.approve(job_id, (0,))
    (applied,) = result.applied
    assert applied.title == "Build" and not result.conflicts and not result.rejected
    written = notes(env)
    assert applied.filename in written and written[OLD].endswith("deploy from main\n")
    (rest,) = (await jobs.pending()).jobs
    assert rest.state == "held" and rest.split_from == job_id
    assert [(o.index, o.action) for o in rest.ops] == [(1, "update")]
    assert await jobs.reject(rest.id, None) is None  # nothing left held
    assert (await jobs.pending()).jobs == ()
    assert notes(env)[OLD].endswith("deploy from main\n")


async def test_rejecting_some_ops_writes_nothing_and_says_how_many_are_still_held(
    env: MemoryStores, held: tuple[Manager, str]
) -> None:
    m, job_id = held
    jobs = JobsService(m, env, lambda: MemoryMode.REVIEW)
    before = notes(env)
    assert await jobs.reject(job_id, (0,)) == 1
    assert notes(env) == before
    (job,) = (await jobs.pending()).jobs
    assert [o.index for o in job.ops if o.status == "held"] == [1]


def failed_job(env: MemoryStores, text: str) -> str:
    job = make_job(env.paths.workspace, [turn(text)])
    job.state, job.attempts, job.error, job.error_kind = (
        "failed",
        3,
        "extract request failed: down",
        "provider",
    )
    manager(env, None).spool.submit(job)
    return job.id


async def test_a_failed_job_is_retried_or_its_turn_read_then_dismissed(env: MemoryStores) -> None:
    again, dropped = failed_job(env, "retry me"), failed_job(env, "forget this turn")
    m = manager(env, Script(answer(create("Later", "retried"))))
    await m.start()
    try:
        jobs = JobsService(m, env, lambda: MemoryMode.AUTO)
        listed = {j.id: j for j in (await jobs.pending()).jobs}
        assert listed[dropped].state == "failed" and listed[dropped].reason == "extract request failed: down"
        await jobs.retry(again)
        assert (await m.wait_for(again, 10)).status == "done"
        assert any(body.endswith("retried\n") for body in notes(env).values())
        assert "forget this turn" in await jobs.turn_text(dropped)
        await jobs.dismiss(dropped)
        assert (await jobs.pending()).jobs == ()
    finally:
        await m.close(1)


async def test_consolidating_a_small_store_says_why_no_job_was_queued(env: MemoryStores) -> None:
    m = manager(env, Script(), mode="auto")
    await m.start()
    try:
        jobs = JobsService(m, env, lambda: MemoryMode.AUTO)
        outcomes = await jobs.consolidate("project")
        (outcome,) = outcomes
        assert isinstance(outcome, Consolidation)
        assert (outcome.level, outcome.job_id) == ("project", None) and outcome.reason
        assert all(isinstance(o, Consolidation) and o.job_id is None for o in await jobs.maybe_consolidate())
        assert (await jobs.pending()).mode == "auto"
    finally:
        await m.close(1)

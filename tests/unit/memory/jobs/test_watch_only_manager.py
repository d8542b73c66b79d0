"""A manager that never runs jobs (the app whose worker is a child process) and the worker process
it leaves them to: it never takes the worker lock, its jobs run elsewhere and reach it as events,
and a job it re-queues gets a fresh retry budget in the worker's process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory.events import JobApplied
from memory.extract.completion import CompletionError
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env
from tests.unit.memory.jobs.test_manager import Script, answer, create, manager, notes, turn

pytestmark = [pytest.mark.plain_ws, pytest.mark.timeout(60)]


@pytest.fixture
def env(tmp_path: Path) -> MemoryStores:
    return make_env(tmp_path)


async def test_a_watch_only_manager_never_elects_and_sees_the_workers_jobs_as_events(
    env: MemoryStores,
) -> None:
    app_script = Script()
    app = manager(env, app_script, runs_jobs=False)
    worker = manager(
        MemoryStores(env.paths.workspace, env.paths.home), Script(answer(create("From the child")))
    )
    events: list[Any] = []
    app.subscribe(events.append)
    await app.start()
    assert not app.is_worker and not app.worker.try_elect()
    await worker.start()
    assert worker.is_worker
    job = await app.submit(turn("x"))
    assert job is not None
    assert (await app.wait_for(job.id, 20)).status == "done"
    assert list(notes(env)) == ["project_knowledge_from-the-child.md"]
    assert app_script.requests == []  # the app's process asked no model
    await worker.close(1)
    await app.close(1)
    assert any(isinstance(e, JobApplied) and e.job_id == job.id for e in events)


async def test_a_job_re_queued_by_another_process_gets_a_fresh_budget_in_the_worker(
    env: MemoryStores,
) -> None:
    failing = CompletionError("overloaded", retryable=True)
    worker = manager(env, Script(failing, failing, failing, answer(create("At last"))), max_attempts=2)
    app = manager(MemoryStores(env.paths.workspace, env.paths.home), Script(), runs_jobs=False)
    await worker.start()
    await app.start()
    job = await app.submit(turn("x"))
    assert job is not None
    assert (await app.wait_for(job.id, 20)).status == "failed"  # two attempts spent in the worker
    await app.retry(job.id)  # the pending screen's `t`, in the app's process
    assert (await app.wait_for(job.id, 20)).status == "done"
    assert list(notes(env)) == ["project_knowledge_at-last.md"]
    await worker.close(1)
    await app.close(1)

"""The manager: a turn's memory update made durable, one behaviour per test.

Synchronization is by events only: a scripted async completion that can block on an
``asyncio.Event``, ``Manager.wait_for`` (woken by the manager's own state changes) and an
injected sleep that records the backoff delays and returns at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory.constants import Level
from memory.events import JobApplied, JobFailed, JobHeld, JobQueued, JobStarted
from memory.extract.completion import CompletionError, CompletionRequest
from memory.jobs.manager import Manager
from memory.jobs.pipeline import REASK_NOTE
from memory.jobs.review import ReviewError
from memory.jobs.spool import Job, MergePart, make_job
from memory.jobs.views import FlushResult
from memory.model import Turn, TurnMessage
from memory.store.fs import FS
from memory.store.stores import MemoryStores
from memory.store.transaction import JobAlreadyDone
from tests.support.memtools import make_env, write_note

# -- helpers ------------------------------------------------------------------------------------


def turn(text: str, session: str = "sess-1") -> Turn:
    return Turn(
        messages=[TurnMessage(role="user", text=text), TurnMessage(role="assistant", text=f"noted: {text}")],
        session=session,
    )


def create(
    title: str, content: str = "body", level: str = "project", type_: str = "project_knowledge", **kw: Any
) -> dict:
    return {"action": "create", "level": level, "type": type_, "title": title, "content": content, **kw}


def answer(*ops: dict) -> str:
    # Prose before and after, as real models write it.
    return "Here is what I would keep:\n```json\n" + json.dumps(list(ops)) + "\n```\nThat is all."


def merge_answer(bodies: dict[str, str]) -> str:
    return json.dumps({"merged": [{"key": k, "content": v} for k, v in bodies.items()]})


class Script:
    """A completion that plays a script: each item is a str, an exception, or a callable(request)."""

    def __init__(self, *items: Any, default: Any = None) -> None:
        self.items = list(items)
        self.default = default
        self.requests: list[CompletionRequest] = []
        self.called = asyncio.Event()

    @property
    def extracts(self) -> list[CompletionRequest]:
        return [r for r in self.requests if r.purpose == "extract"]

    @property
    def merges(self) -> list[CompletionRequest]:
        return [r for r in self.requests if r.purpose == "merge"]

    async def __call__(self, request: CompletionRequest) -> str:
        self.requests.append(request)
        self.called.set()
        if self.items:
            item = self.items.pop(0)
        elif self.default is not None:
            item = self.default
        else:
            raise AssertionError(f"unexpected request #{len(self.requests)}: {request.purpose}")
        if callable(item) and not isinstance(item, BaseException):
            item = item(request)
            if inspect.isawaitable(item):
                item = await item
        if isinstance(item, BaseException):
            raise item
        return item


class Gate:
    """An answer that waits for the test: ``entered`` is set when the request arrives."""

    def __init__(self, text: str = "[]") -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.text = text

    async def __call__(self, request: CompletionRequest) -> str:
        self.entered.set()
        await self.release.wait()
        return self.text


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def env(tmp_path: Path) -> MemoryStores:
    return make_env(tmp_path)


def manager(env: MemoryStores, completion: Any, **kw: Any) -> Manager:
    kw.setdefault("sleep", Sleeps())
    kw.setdefault("session", "sess-1")
    kw.setdefault("poll_interval", 0.05)
    return Manager(env, completion, **kw)


def notes(env: MemoryStores, level: Level = Level.PROJECT) -> dict[str, str]:
    folder = env.store(level).dir
    if not folder.exists():
        return {}
    return {p.name: p.read_text() for p in sorted(folder.glob("*.md")) if p.name != "MEMORY.md"}


def spooled(env: MemoryStores) -> list[Job]:
    return [e.job for e in Manager(env, None).entries() if e.job is not None]


async def run_until_done(m: Manager, *jobs: Job, timeout: float = 10.0) -> None:
    for job in jobs:
        assert await m.wait_for(job.id, timeout), f"job {job.id} did not finish"


# -- submit ----------------------------------------------------------------------------------------


async def test_submit_spools_durably_and_returns_before_the_model_is_asked(env: MemoryStores) -> None:
    gate = Gate(answer(create("Build workflow", "Run `make test`.", summary="Run tests first.")))
    script = Script(gate)
    m = manager(env, script)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    assert m.is_worker
    job = await m.submit(turn("we always run make test before release"))
    assert job is not None
    # Returned with the job on disk and the model not yet asked.
    assert m.spool.path(job.id).exists()
    assert not script.requests and not gate.entered.is_set()
    assert [type(e) for e in events] == [JobQueued]
    await gate.entered.wait()
    assert m.spool.path(job.id).exists()  # still spooled while the request runs
    gate.release.set()
    await run_until_done(m, job)
    assert not m.spool.path(job.id).exists()
    assert list(notes(env)) == ["project_knowledge_build-workflow.md"]
    assert [type(e) for e in events] == [JobQueued, JobStarted, JobApplied]
    # What the next Run sees (the merged index is read from the stores, no event carries it).
    assert "Build workflow — Run tests first." in env.merged_index()
    assert events[2].applied[0].filename == "project_knowledge_build-workflow.md"
    fm = notes(env)["project_knowledge_build-workflow.md"]
    assert "source: sess-1" in fm
    await m.close(1)


async def test_submit_without_a_running_worker_only_spools(env: MemoryStores) -> None:
    m = manager(env, Script())
    job = await m.submit(turn("hello"))
    assert job is not None and m.spool.load(job.id).state == "queued"
    assert await m.submit(Turn(messages=[TurnMessage(role="user", text="  ")])) is None
    assert [j.id for j in m.pending()] == [job.id]


async def test_mode_off_never_spools_nor_asks(env: MemoryStores) -> None:
    script = Script()
    leftover = make_job(env.paths.workspace, [turn("from an earlier process")])
    m0 = manager(env, None)
    m0.spool.submit(leftover)
    m = manager(env, script, mode="off")
    await m.start()
    assert await m.submit(turn("remember this")) is None
    assert not m.is_worker
    res = await m.flush(timeout=1)
    assert res.unfinished == [leftover.id] and not res.ok
    await m.close(1)
    assert script.requests == []
    assert [j.id for j in spooled(env)] == [leftover.id]


async def test_switching_mode_off_at_runtime_stops_requests(env: MemoryStores) -> None:
    script = Script(default="[]")
    m = manager(env, script)
    await m.start()
    first = await m.submit(turn("one"))
    await run_until_done(m, first)
    assert len(script.requests) == 1
    m.mode = "off"
    assert await m.submit(turn("two")) is None
    leftover = make_job(env.paths.workspace, [turn("spooled by another process")])
    m.spool.submit(leftover)
    assert not await m.wait_for(leftover.id, 0.2)
    await m.close(1)
    assert len(script.requests) == 1 and [j.id for j in spooled(env)] == [leftover.id]


async def test_no_completion_spools_but_never_becomes_the_worker(env: MemoryStores) -> None:
    m = manager(env, None)
    await m.start()
    job = await m.submit(turn("x"))
    assert job is not None and not m.is_worker
    await m.close(1)
    assert [j.id for j in spooled(env)] == [job.id]


# -- close and the next process ----------------------------------------------------------------------


async def test_close_leaves_pending_jobs_spooled_and_the_next_manager_runs_them_once(
    env: MemoryStores,
) -> None:
    gate = Gate()  # never released: the request is in flight when close gives up
    m1 = manager(env, Script(gate))
    j1 = await m1.submit(turn("fact one: the API lives in api/"))
    j2 = await m1.submit(turn("fact two: docs are in docs/"))
    await m1.start()
    await gate.entered.wait()
    await m1.close(timeout=0)
    assert not m1.is_worker
    left = spooled(env)
    assert len(left) == 1 and left[0].state == "queued" and left[0].raw_answer is None
    assert {t.messages[0].text for t in left[0].turns} == {
        j1.turns[0].messages[0].text,
        j2.turns[0].messages[0].text,
    }

    script = Script(answer(create("API location", "api/"), create("Docs location", "docs/")))
    m2 = manager(env, script)
    await m2.start()
    assert m2.is_worker
    await run_until_done(m2, j1, j2)
    await m2.close(1)
    assert len(script.extracts) == 1
    assert sorted(notes(env)) == ["project_knowledge_api-location.md", "project_knowledge_docs-location.md"]

    m3 = manager(env, Script())  # any request would fail the script
    await m3.start()
    res = await m3.flush(timeout=1)
    await m3.close(1)
    assert res == FlushResult()
    assert len(notes(env)) == 2


async def test_a_close_after_an_abandoned_close_cancelled_the_worker_returns_quietly(
    env: MemoryStores,
) -> None:
    gate = Gate()  # never released: the request is in flight
    m = manager(env, Script(gate))
    job = await m.submit(turn("a fact"))
    await m.start()
    await gate.entered.wait()
    # An earlier close whose own caller gave up (the app's quit bound) left the worker cancelled.
    assert m._task is not None
    m._task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await m._task
    await m.close(timeout=1)  # before: raised the worker's CancelledError
    assert job is not None and [j.id for j in spooled(env)] == [job.id]


async def test_close_drains_runnable_jobs(env: MemoryStores) -> None:
    script = Script(answer(create("A")), answer(create("B")))
    m = manager(env, script, max_batch_turns=1)
    await m.submit(turn("a"))
    await m.submit(turn("b"))
    await m.start()
    await m.close(timeout=10)
    assert len(script.extracts) == 2 and spooled(env) == []
    assert sorted(notes(env)) == ["project_knowledge_a.md", "project_knowledge_b.md"]


async def test_replay_with_stored_raw_answer_reparses_and_never_asks(env: MemoryStores) -> None:
    job = make_job(
        env.paths.workspace, [turn("crashed right after the answer was stored")], session="old-sess"
    )
    job.raw_answer = answer(create("Replayed", "from the stored answer"))
    job.snapshot_hashes = env.snapshot().hashes
    manager(env, None).spool.submit(job)
    script = Script()  # no answers: any request is recorded and fails
    m = manager(env, script)
    await m.start()
    await run_until_done(m, job)
    await m.close(1)
    assert script.requests == []
    assert list(notes(env)) == ["project_knowledge_replayed.md"]
    assert "source: old-sess" in notes(env)["project_knowledge_replayed.md"]
    assert env.history()[-1].jobs == [job.id]


async def test_a_committed_job_is_dropped_quietly(env: MemoryStores, monkeypatch: pytest.MonkeyPatch) -> None:
    m = manager(env, Script(answer(create("X"))))
    real_apply = env.apply

    def apply_twice(*a: Any, **kw: Any) -> Any:
        real_apply(*a, **kw)  # committed (and the job file removed) …
        return real_apply(*a, **kw)  # … so the replay is refused

    monkeypatch.setattr(env, "apply", apply_twice)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("x"))
    await run_until_done(m, job)
    await m.close(1)
    assert not any(isinstance(e, JobFailed) for e in events)
    assert list(notes(env)) == ["project_knowledge_x.md"] and spooled(env) == []
    with pytest.raises(JobAlreadyDone):
        real_apply([], source="s", jobs=[m.spool.path(job.id)])


# -- snapshot at pickup, coalescing -------------------------------------------------------------------


async def test_a_queued_job_sees_the_note_written_by_the_job_before_it(env: MemoryStores) -> None:
    gate = Gate(answer(create("Release checklist", "tag, build, upload", summary="How we release.")))
    script = Script(gate, answer())
    m = manager(env, script)
    await m.start()
    j1 = await m.submit(turn("release: tag, build, upload"))
    await gate.entered.wait()
    j2 = await m.submit(turn("queued while the first job's request is running"))
    gate.release.set()
    await run_until_done(m, j1, j2)
    await m.close(1)
    first, second = script.extracts
    line = (
        "- [project_knowledge] Release checklist — How we release. (project_knowledge_release-checklist.md)"
    )
    assert line not in first.prompt
    assert line in second.prompt


async def test_a_backlog_is_coalesced_into_one_request(env: MemoryStores) -> None:
    m = manager(env, Script(answer(create("One")), answer(create("Two"))))
    jobs = [await m.submit(turn(f"backlog turn number {k}")) for k in range(1, 10)]
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    await run_until_done(m, *jobs)
    await m.close(1)
    script = m.completion
    assert isinstance(script, Script)
    first, second = script.extracts
    for k in range(1, 9):
        assert f"[turn {k}]" in first.prompt and f"backlog turn number {k}" in first.prompt
    assert "backlog turn number 9" not in first.prompt and "backlog turn number 9" in second.prompt
    started = [e for e in events if isinstance(e, JobStarted)]
    assert started[0].turns == 8 and started[0].merged_from == tuple(j.id for j in jobs[:8])
    assert started[1].turns == 1
    assert spooled(env) == []


async def test_coalescing_respects_the_text_budget_and_mode(env: MemoryStores) -> None:
    script = Script(default=answer())
    m = manager(env, script, max_batch_bytes=1000)
    big = await m.submit(turn("a" * 600))
    await m.submit(turn("b" * 600))  # would pass the budget: its own request
    m.mode = "review"
    await m.submit(turn("c"))  # another mode: never in the same request
    await m.start()
    assert (await m.flush(timeout=10)).ok
    await m.close(1)
    assert len(script.extracts) == 3
    assert "a" * 600 in script.extracts[0].prompt and "b" * 600 not in script.extracts[0].prompt
    assert big is not None


async def test_a_crash_between_coalesced_write_and_original_removal_runs_each_turn_once(
    env: MemoryStores,
) -> None:
    base = manager(env, None)
    a = await base.submit(turn("turn a"))
    b = await base.submit(turn("turn b"))
    combined = Job(
        id=a.id[:20] + "-0000beef",
        workspace=a.workspace,
        created=a.created,
        session="sess-1",
        turns=[*a.turns, *b.turns],
        merged_from=[a.id, b.id],
    )
    base.spool.submit(combined)  # the originals were not removed yet
    script = Script(answer(create("Both")))
    m = manager(env, script)
    await m.start()
    await run_until_done(m, a, b, combined)
    await m.close(1)
    assert len(script.extracts) == 1
    prompt = script.extracts[0].prompt
    assert prompt.count("noted: turn a") == 1 and prompt.count("noted: turn b") == 1
    assert list(notes(env)) == ["project_knowledge_both.md"]


# -- updates: merge and conflicts ----------------------------------------------------------------------


async def test_updates_are_merged_in_one_request_and_the_merged_body_is_written(env: MemoryStores) -> None:
    write_note(env, Level.PROJECT, "project_knowledge_build.md", "Build", "Use make.")
    write_note(
        env, Level.USER, "user_preference_lang.md", "Language", "Answer in English.", type_="user_preference"
    )
    extract = answer(
        {
            "action": "update",
            "level": "project",
            "filename": "project_knowledge_build.md",
            "content": "Also make lint.",
        },
        {
            "action": "update",
            "level": "user",
            "filename": "user_preference_lang.md",
            "content": "Use French.",
        },
        create("New one"),
    )
    merged = merge_answer({"op0": "Use make.\nAlso run make lint.", "op1": "Answer in French."})
    script = Script(extract, merged)
    m = manager(env, script)
    await m.start()
    job = await m.submit(turn("also lint; and speak French"))
    await run_until_done(m, job)
    await m.close(1)
    assert len(script.merges) == 1
    prompt = script.merges[0].prompt
    for text in ("Use make.", "Also make lint.", "Answer in English.", "Use French."):
        assert text in prompt
    assert notes(env)["project_knowledge_build.md"].endswith("Use make.\nAlso run make lint.\n")
    assert notes(env, Level.USER)["user_preference_lang.md"].endswith("Answer in French.\n")
    assert "project_knowledge_new-one.md" in notes(env)


async def test_an_update_without_a_merged_body_is_rejected_with_a_reason(env: MemoryStores) -> None:
    write_note(env, Level.PROJECT, "project_knowledge_a.md", "A", "old a")
    write_note(env, Level.PROJECT, "project_knowledge_b.md", "B", "old b")
    extract = answer(
        {"action": "update", "level": "project", "filename": "project_knowledge_a.md", "content": "new a"},
        {"action": "update", "level": "project", "filename": "project_knowledge_b.md", "content": "new b"},
    )
    m = manager(env, Script(extract, merge_answer({"op0": "merged a"})))
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("x"))
    await run_until_done(m, job)
    await m.close(1)
    assert notes(env)["project_knowledge_a.md"].endswith("merged a\n")
    assert notes(env)["project_knowledge_b.md"].endswith("old b\n")
    applied = next(e for e in events if isinstance(e, JobApplied))
    assert [r.index for r in applied.rejected] == [1]
    assert "no merged body" in applied.rejected[0].reason
    assert env.history()[-1].rejected[0].index == 1


async def test_a_stored_merge_answer_is_reused_on_replay(env: MemoryStores) -> None:
    write_note(env, Level.PROJECT, "project_knowledge_a.md", "A", "old a")
    job = make_job(env.paths.workspace, [turn("x")])
    job.raw_answer = answer(
        {"action": "update", "level": "project", "filename": "project_knowledge_a.md", "content": "new a"}
    )
    job.snapshot_hashes = env.snapshot().hashes
    job.merge_raw = [MergePart(keys=["op0"], answer=merge_answer({"op0": "stored merge"}))]
    manager(env, None).spool.submit(job)
    script = Script()
    m = manager(env, script)
    await m.start()
    await run_until_done(m, job)
    await m.close(1)
    assert script.requests == []
    assert notes(env)["project_knowledge_a.md"].endswith("stored merge\n")


async def test_a_hand_edit_between_snapshot_and_apply_is_a_conflict_not_clobbered(env: MemoryStores) -> None:
    path = write_note(env, Level.PROJECT, "project_knowledge_build.md", "Build", "Use make.")
    extract = answer(
        {
            "action": "update",
            "level": "project",
            "filename": "project_knowledge_build.md",
            "content": "Use ninja.",
        }
    )
    hand_edit = b"---\ntitle: Build\ntype: project_knowledge\n---\nUse bazel (edited by hand).\n"

    def edit_then_merge(request: CompletionRequest) -> str:
        path.write_bytes(hand_edit)  # the person edits while the job runs
        return merge_answer({"op0": "Use make.\nUse ninja."})

    m = manager(env, Script(extract, edit_then_merge))
    index_before = env.merged_index()
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("we switched to ninja"))
    await run_until_done(m, job)
    await m.close(1)
    assert path.read_bytes() == hand_edit
    applied = next(e for e in events if isinstance(e, JobApplied))
    assert not applied.applied
    (conflict,) = applied.conflicts
    assert conflict.filename == "project_knowledge_build.md" and "changed" in conflict.reason
    assert env.history()[-1].conflicts[0].filename == "project_knowledge_build.md"
    assert env.merged_index() == index_before  # nothing written: the next Run sees what it saw


async def test_a_delete_against_a_stale_snapshot_is_a_conflict(env: MemoryStores) -> None:
    path = write_note(env, Level.PROJECT, "project_knowledge_old.md", "Old", "v1")
    job = make_job(env.paths.workspace, [turn("x")])
    job.raw_answer = answer({"action": "delete", "level": "project", "filename": "project_knowledge_old.md"})
    job.snapshot_hashes = env.snapshot().hashes
    write_note(env, Level.PROJECT, "project_knowledge_old.md", "Old", "v2 by hand")
    manager(env, None).spool.submit(job)
    m = manager(env, Script())
    await m.start()
    await run_until_done(m, job)
    await m.close(1)
    assert path.exists() and path.read_text().endswith("v2 by hand\n")
    assert env.history()[-1].conflicts[0].filename == "project_knowledge_old.md"


# -- failures, retries, re-ask -------------------------------------------------------------------------


async def test_provider_failures_back_off_then_the_job_is_failed_kept_and_flush_retries(
    env: MemoryStores,
) -> None:
    sleeps = Sleeps()
    script = Script(
        CompletionError("overloaded"),
        RuntimeError("connection reset"),
        CompletionError("overloaded"),
        answer(create("Finally")),
    )
    m = manager(env, script, sleep=sleeps)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("x"))
    await run_until_done(m, job)
    assert sleeps.delays == [1, 2]
    assert len(script.requests) == 3
    (kept,) = m.pending()
    assert kept.id == job.id and kept.state == "failed" and kept.attempts == 3
    assert "overloaded" in (kept.error or "")
    failed = [e for e in events if isinstance(e, JobFailed)]
    assert len(failed) == 1 and failed[0].retryable and failed[0].job_id == job.id
    assert notes(env) == {}

    res = await m.flush(timeout=10)
    await m.close(1)
    assert res.done == [job.id] and res.ok
    assert list(notes(env)) == ["project_knowledge_finally.md"] and spooled(env) == []


async def test_a_non_retryable_error_fails_at_once(env: MemoryStores) -> None:
    sleeps = Sleeps()
    script = Script(CompletionError("401 invalid x-api-key", retryable=False))
    m = manager(env, script, sleep=sleeps)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("x"))
    await run_until_done(m, job)
    await m.close(1)
    assert sleeps.delays == [] and len(script.requests) == 1
    (failed,) = [e for e in events if isinstance(e, JobFailed)]
    assert not failed.retryable and "401" in failed.reason
    assert m.spool.load(job.id).state == "failed"


async def test_flush_without_failed_leaves_failed_jobs(env: MemoryStores) -> None:
    m = manager(env, Script(CompletionError("no", retryable=False)))
    await m.start()
    job = await m.submit(turn("x"))
    await run_until_done(m, job)
    res = await m.flush(timeout=1, include_failed=False)
    await m.close(1)
    assert list(res.failed) == [job.id] and not res.ok


async def test_no_json_is_reasked_once_then_failed_with_the_raw_answer_kept(env: MemoryStores) -> None:
    script = Script("I do not think anything is worth saving.", "Still just prose, sorry.")
    m = manager(env, script)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("x"))
    await run_until_done(m, job)
    assert len(script.extracts) == 2
    assert script.extracts[1].prompt.endswith(REASK_NOTE) and not script.extracts[0].prompt.endswith(
        REASK_NOTE
    )
    kept = m.spool.load(job.id)
    assert kept.state == "failed" and kept.reasked and kept.raw_answer == "Still just prose, sorry."
    assert "no JSON" in (kept.error or "")
    assert any(isinstance(e, JobFailed) for e in events)
    # flush asks afresh (the kept answer cannot parse)
    script.items.append(answer(create("Second chance")))
    res = await m.flush(timeout=10)
    await m.close(1)
    assert res.ok and list(notes(env)) == ["project_knowledge_second-chance.md"]


async def test_a_reask_that_answers_json_applies(env: MemoryStores) -> None:
    script = Script("Hmm.", "[]")
    m = manager(env, script)
    await m.start()
    job = await m.submit(turn("x"))
    await run_until_done(m, job)
    await m.close(1)
    assert len(script.requests) == 2 and spooled(env) == []


async def test_the_worker_survives_a_job_that_raises(
    env: MemoryStores, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_apply = env.apply
    calls = {"n": 0}

    def flaky_apply(*a: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyError("a bug")
        return real_apply(*a, **kw)

    monkeypatch.setattr(env, "apply", flaky_apply)
    m = manager(env, Script(answer(create("Lost")), answer(create("Kept"))), max_batch_turns=1)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    j1 = await m.submit(turn("one"))
    j2 = await m.submit(turn("two"))
    await run_until_done(m, j1, j2)
    kept = m.spool.load(j1.id)
    assert kept.state == "failed" and "internal error" in (kept.error or "") and kept.raw_answer
    assert list(notes(env)) == ["project_knowledge_kept.md"]
    # The raw answer is kept: flush re-parses it, no new request.
    n_requests = len(m.completion.requests)
    assert (await m.flush(timeout=10)).ok
    await m.close(1)
    assert len(m.completion.requests) == n_requests
    assert sorted(notes(env)) == ["project_knowledge_kept.md", "project_knowledge_lost.md"]


async def test_subscriber_errors_are_logged_not_raised(
    env: MemoryStores, caplog: pytest.LogCaptureFixture
) -> None:
    m = manager(env, Script())
    seen: list[Any] = []

    def bad(event: Any) -> None:
        raise RuntimeError("ui is gone")

    m.subscribe(bad)
    unsubscribe = m.subscribe(seen.append)
    assert await m.submit(turn("x")) is not None
    assert len(seen) == 1 and "subscriber" in caplog.text
    unsubscribe()
    await m.submit(turn("y"))
    assert len(seen) == 1


async def test_wait_for_times_out_while_the_job_runs(env: MemoryStores) -> None:
    gate = Gate()
    m = manager(env, Script(gate))
    await m.start()
    job = await m.submit(turn("x"))
    await gate.entered.wait()
    assert not await m.wait_for(job.id, 0.05)
    gate.release.set()
    assert await m.wait_for(job.id, 10)
    await m.close(1)


# -- orphans ------------------------------------------------------------------------------------------


async def test_an_orphaned_job_is_listed_and_never_applied(env: MemoryStores, tmp_path: Path) -> None:
    gone = tmp_path / "deleted-ws"
    (gone / ".git").mkdir(parents=True)
    orphan = make_job(os.path.realpath(gone), [turn("from a workspace that was deleted")])
    orphan.raw_answer = answer(create("Orphan"))
    orphan.snapshot_hashes = {}
    manager(env, None).spool.submit(orphan)
    (gone / ".git").rmdir()
    gone.rmdir()
    script = Script()
    m = manager(env, script)
    await m.start()
    res = await m.flush(timeout=1)
    await m.close(1)
    assert res == FlushResult() and script.requests == []
    assert m.pending() == []
    (entry,) = m.entries(all_workspaces=True)
    assert entry.id == orphan.id and entry.status == "orphaned"
    assert [j.id for j in m.pending(all_workspaces=True)] == [orphan.id]
    assert notes(env) == {}


# -- review mode ---------------------------------------------------------------------------------------


async def held_job(env: MemoryStores, *ops: dict) -> tuple[Manager, Job, list[Any]]:
    m = manager(env, Script(answer(*ops)), mode="review")
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("review me"))
    await run_until_done(m, job)
    return m, job, events


async def test_review_holds_ops_then_approve_writes_exactly_the_approved_subset(env: MemoryStores) -> None:
    m, job, events = await held_job(env, create("Zero"), create("One"), {"action": "bogus"}, create("Three"))
    held = m.spool.load(job.id)
    assert held.state == "held" and [h.index for h in held.held_ops] == [0, 1, 3]
    assert [r.index for r in held.rejected] == [2]
    (ev,) = [e for e in events if isinstance(e, JobHeld)]
    assert [o.index for o in ev.ops] == [0, 1, 3]
    assert notes(env) == {}
    # flush leaves held jobs alone
    res = await m.flush(timeout=1)
    assert res.held == [job.id] and res.ok

    result = await m.approve(job.id, [0])
    assert [a.filename for a in result.applied] == ["project_knowledge_zero.md"]
    assert list(notes(env)) == ["project_knowledge_zero.md"]
    assert not m.spool.path(job.id).exists()
    (rest,) = m.pending()
    assert rest.state == "held" and [h.index for h in rest.held_ops] == [1, 3]
    assert isinstance(events[-1], JobHeld) and events[-1].job_id == rest.id

    still = await m.reject(rest.id, [1])
    assert still is not None and [h.index for h in still.held_ops] == [3]
    result = await m.approve(rest.id)
    assert [a.index for a in result.applied] == [3]
    assert sorted(notes(env)) == ["project_knowledge_three.md", "project_knowledge_zero.md"]
    assert m.pending() == []
    last = env.history()[-1]
    assert sorted(r.index for r in last.rejected) == [1, 2]
    assert any("rejected in review" in r.reason for r in last.rejected)
    await m.close(1)


async def test_reject_all_removes_the_job_and_records_the_rejections(env: MemoryStores) -> None:
    m, job, _ = await held_job(env, create("A"), create("B"))
    assert await m.reject(job.id) is None
    assert m.pending() == [] and notes(env) == {}
    assert sorted(r.index for r in env.history()[-1].rejected) == [0, 1]
    with pytest.raises(ReviewError):
        await m.approve(job.id)
    await m.close(1)


async def test_approve_shows_a_conflict_when_the_note_changed_since(env: MemoryStores) -> None:
    path = write_note(env, Level.PROJECT, "project_knowledge_x.md", "X", "v1")
    m = manager(
        env,
        Script(
            answer(
                {
                    "action": "update",
                    "level": "project",
                    "filename": "project_knowledge_x.md",
                    "content": "v2",
                }
            ),
            merge_answer({"op0": "v1 and v2"}),
        ),
        mode="review",
    )
    await m.start()
    job = await m.submit(turn("x"))
    await run_until_done(m, job)
    assert m.spool.load(job.id).held_ops[0].op.content == "v1 and v2"
    write_note(env, Level.PROJECT, "project_knowledge_x.md", "X", "edited by hand")
    before = path.read_bytes()
    result = await m.approve(job.id)
    await m.close(1)
    assert not result.applied and result.conflicts[0].filename == "project_knowledge_x.md"
    assert path.read_bytes() == before and m.pending() == []


async def test_approve_refuses_unknown_ops_and_jobs_not_held(env: MemoryStores) -> None:
    m, job, _ = await held_job(env, create("A"))
    with pytest.raises(ReviewError, match="holds no op 7"):
        await m.approve(job.id, [7])
    queued = m.spool.submit(make_job(env.paths.workspace, [turn("q")]))
    with pytest.raises(ReviewError, match="not held"):
        await m.reject(queued.stem)
    await m.close(0)


async def test_a_split_child_of_an_uncommitted_approval_is_dropped(
    env: MemoryStores, monkeypatch: pytest.MonkeyPatch
) -> None:
    m, job, _ = await held_job(env, create("A"), create("B"))

    def crash(*a: Any, **kw: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(env, "apply", crash)
    with pytest.raises(OSError):
        await m.approve(job.id, [0])
    monkeypatch.undo()
    # The parent still holds both ops; the child is not live.
    assert [j.id for j in m.pending()] == [job.id]
    result = await m.approve(job.id)
    assert sorted(a.title for a in result.applied) == ["A", "B"]
    assert m.pending() == [] and m.spool.ids() == []
    await m.close(0)


async def test_an_approval_interrupted_after_its_commit_point_loses_and_repeats_nothing(
    tmp_path: Path,
) -> None:
    armed = {"on": False}

    def hook(op: str, path: str) -> None:
        if armed["on"] and op == "unlink" and "/spool/" in path:
            armed["on"] = False
            raise OSError("crash after the commit point")

    env = make_env(tmp_path, FS(hook=hook))
    m, job, _ = await held_job(env, create("A"), create("B"))
    armed["on"] = True
    with pytest.raises(OSError):
        await m.approve(job.id, [0])
    assert m.spool.path(job.id).exists()  # the commit's roll-forward did not finish
    with pytest.raises(ReviewError, match="no spooled job"):
        await m.approve(job.id)  # recovery completes the first approval: the parent is gone
    (rest,) = m.pending()
    assert rest.split_from == job.id and [h.index for h in rest.held_ops] == [1]
    await m.approve(rest.id)
    assert sorted(notes(env)) == ["project_knowledge_a.md", "project_knowledge_b.md"]
    assert m.pending() == []
    await m.close(0)


# -- one worker per workspace ---------------------------------------------------------------------------


async def test_two_managers_in_one_process_elect_one_worker_and_hand_over(env: MemoryStores) -> None:
    calls: list[str] = []

    def record(name: str) -> Callable[[CompletionRequest], str]:
        def reply(request: CompletionRequest) -> str:
            calls.append(name)
            return "[]"

        return reply

    a = manager(env, Script(default=record("a")), max_batch_turns=1)
    b = manager(env, Script(default=record("b")), max_batch_turns=1)
    await a.start()
    await b.start()
    assert a.is_worker and not b.is_worker
    jobs = [await (a if k % 2 else b).submit(turn(f"job {k}")) for k in range(6)]
    await run_until_done(b, *jobs)  # b only watches; a runs them
    assert calls == ["a"] * 6
    await a.close(1)
    gate = Gate()
    b.completion.items.append(gate)
    late = await b.submit(turn("after the hand-over"))
    await gate.entered.wait()  # b was elected once a let go
    assert b.is_worker
    gate.release.set()
    await run_until_done(b, late)
    await b.close(1)
    assert calls == ["a"] * 6


async def test_worker_lock_excludes_within_one_process(env: MemoryStores) -> None:
    a = manager(env, Script())
    b = manager(env, Script())
    assert a.worker.try_elect() and not b.worker.try_elect()
    a.worker.release()
    assert b.worker.try_elect() and not a.worker.try_elect()
    b.worker.release()

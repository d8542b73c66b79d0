"""Issue 6 on the manager: defects 3, 6, 7a, 11, 19, 21 and the API the app stands on
(async submit/approve/reject, set_mode, jobs(), retry/dismiss, events from other processes)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memory.constants import Level
from memory.events import (
    JobApplied,
    JobDismissed,
    JobFailed,
    JobOrphaned,
    JobQueued,
    JobRetrying,
    JobStarted,
    JobTakenOver,
)
from memory.extract.completion import CompletionError
from memory.jobs.manager import Manager
from memory.jobs.pipeline import MERGE_REASK_NOTE
from memory.jobs.review import ReviewError
from memory.jobs.spool import make_job, new_job_id
from memory.jobs.views import JobView
from memory.store.fs import FS
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env, write_note
from tests.unit.memory.jobs.test_manager import (
    Gate,
    Script,
    Sleeps,
    answer,
    create,
    manager,
    merge_answer,
    notes,
    spooled,
    turn,
)

pytestmark = [pytest.mark.plain_ws, pytest.mark.timeout(60)]


@pytest.fixture
def env(tmp_path: Path) -> MemoryStores:
    return make_env(tmp_path)


def update(filename: str, content: str, level: str = "project") -> dict[str, Any]:
    return {"action": "update", "level": level, "filename": filename, "content": content}


# -- 3: every merge request is one the SDK sends; bounded ------------------------------------------


async def test_an_update_of_a_note_too_large_to_merge_is_rejected_with_a_reason_to_edit_it_by_hand(
    env: MemoryStores,
) -> None:
    write_note(env, Level.PROJECT, "project_knowledge_huge.md", "Huge", "h" * (1024 * 1024))
    write_note(env, Level.PROJECT, "project_knowledge_small.md", "Small", "old")
    script = Script(
        answer(update("project_knowledge_huge.md", "more"), update("project_knowledge_small.md", "new")),
        merge_answer({"op1": "old and new"}),
    )
    m = manager(env, script)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("x"))
    assert (await m.wait_for(job.id, 10)).status == "done"
    await m.close(1)
    (merge,) = script.merges
    assert "hhhh" not in merge.prompt and len(merge.prompt) < 10_000
    applied = next(e for e in events if isinstance(e, JobApplied))
    (rejection,) = applied.rejected
    assert (
        rejection.index == 0
        and "too large to merge" in rejection.reason
        and "edit it by hand" in rejection.reason
    )
    assert notes(env)["project_knowledge_small.md"].endswith("old and new\n")


async def test_merges_too_large_for_one_request_are_split_into_several(env: MemoryStores) -> None:
    names = [f"project_knowledge_n{k}.md" for k in range(5)]
    for k, name in enumerate(names):
        write_note(env, Level.PROJECT, name, f"N{k}", str(k) * (16 * 1024))
    everything = merge_answer({f"op{k}": f"merged {k}" for k in range(5)})
    script = Script(answer(*[update(n, f"plus {k}") for k, n in enumerate(names)]), default=everything)
    m = manager(env, script)
    await m.start()
    job = await m.submit(turn("x"))
    assert (await m.wait_for(job.id, 10)).status == "done"
    await m.close(1)
    assert len(script.merges) >= 2
    assert all(len(r.prompt.encode()) <= 52 * 1024 and r.max_tokens <= 32_000 for r in script.merges)
    assert all(notes(env)[n].endswith(f"merged {k}\n") for k, n in enumerate(names))


# -- 21: a merge answer without JSON is asked again ------------------------------------------------


async def test_a_merge_answer_without_json_is_asked_again_once(env: MemoryStores) -> None:
    write_note(env, Level.PROJECT, "project_knowledge_a.md", "A", "old a")
    script = Script(
        answer(update("project_knowledge_a.md", "new a")),
        "Sure, I merged it for you.",
        merge_answer({"op0": "old a, new a"}),
    )
    m = manager(env, script)
    await m.start()
    job = await m.submit(turn("x"))
    assert (await m.wait_for(job.id, 10)).status == "done"
    await m.close(1)
    first, second = script.merges
    assert second.prompt.endswith(MERGE_REASK_NOTE) and not first.prompt.endswith(MERGE_REASK_NOTE)
    assert notes(env)["project_knowledge_a.md"].endswith("old a, new a\n")


# -- 11: one retry budget per job ------------------------------------------------------------------


async def test_extraction_and_merge_share_one_budget_of_three_attempts(env: MemoryStores) -> None:
    write_note(env, Level.PROJECT, "project_knowledge_a.md", "A", "old a")
    sleeps = Sleeps()
    script = Script(
        CompletionError("overloaded"),
        CompletionError("overloaded"),
        answer(update("project_knowledge_a.md", "new a")),
        CompletionError("overloaded"),  # the merge's first failure is the job's third
        merge_answer({"op0": "would be merged"}),
    )
    m = manager(env, script, sleep=sleeps)
    await m.start()
    job = await m.submit(turn("x"))
    outcome = await m.wait_for(job.id, 10)
    await m.close(1)
    assert outcome.status == "failed" and "3 attempts" in outcome.reason
    assert len(script.requests) == 4 and sleeps.delays == [1, 2]
    assert notes(env)["project_knowledge_a.md"].endswith("old a\n")


async def test_each_retry_is_an_event_and_a_retrying_job_view_with_its_next_try(env: MemoryStores) -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    delays: list[float] = []

    async def held_sleep(delay: float) -> None:
        delays.append(delay)
        entered.set()
        await release.wait()

    script = Script(CompletionError("overloaded"), answer(create("Later")))
    m = manager(env, script, sleep=held_sleep, clock=lambda: 1_800_000_000.0)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("x"))
    await entered.wait()
    (retry,) = [e for e in events if isinstance(e, JobRetrying)]
    assert (retry.job_id, retry.attempt, retry.max_attempts) == (job.id, 1, 3)
    assert retry.next_try_at == "2027-01-15T08:00:01Z" and "overloaded" in retry.reason
    (view,) = await m.jobs()
    assert view.state == "retrying" and view.next_try_at == retry.next_try_at and view.attempts == 1
    release.set()
    assert (await m.wait_for(job.id, 10)).status == "done"
    await m.close(1)


async def test_the_next_try_a_retrying_job_shows_is_the_wait_it_takes_whatever_the_backoff_base(
    env: MemoryStores,
) -> None:
    # The app scales the backoff (PSEUDOCLAUDE_RETRY_DELAY); the pending screen counts down to next_try_at.
    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)

    script = Script(CompletionError("overloaded"), CompletionError("overloaded"), answer(create("Later")))
    m = manager(env, script, sleep=sleep, clock=lambda: 1_800_000_000.0, backoff_base=30.0)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("x"))
    assert (await m.wait_for(job.id, 10)).status == "done"
    retries = [e for e in events if isinstance(e, JobRetrying)]
    assert [r.next_try_at for r in retries] == ["2027-01-15T08:00:30Z", "2027-01-15T08:01:00Z"]
    assert delays == [30.0, 60.0]
    await m.close(1)


# -- 6: torn and damaged job files -----------------------------------------------------------------


async def test_a_damaged_job_file_never_blocks_the_others_and_flush_names_it(env: MemoryStores) -> None:
    env.paths.spool_dir.mkdir(parents=True, exist_ok=True)
    torn = env.paths.spool_dir / f"{new_job_id()}.json"
    torn.write_bytes(b"")  # what a crash between create and write used to leave
    script = Script(answer(create("Kept")))
    m = manager(env, script)
    good = await m.submit(turn("a good turn"))
    res = await m.flush(timeout=10)
    await m.close(1)
    assert res.done == [good.id] and "empty file" in res.failed[torn.stem]
    assert list(notes(env)) == ["project_knowledge_kept.md"] and torn.read_bytes() == b""
    (view,) = [v for v in await Manager(env, None).jobs() if v.id == torn.stem]
    assert view.state == "damaged" and "empty" in (view.reason or "")


def test_doctor_reports_a_damaged_job_and_fix_moves_it_aside_bytes_kept(tmp_path: Path) -> None:
    from memory.jobs.doctor import diagnose, fix

    env = make_env(tmp_path)
    env.paths.spool_dir.mkdir(parents=True)
    bad = env.paths.spool_dir / f"{new_job_id()}.json"
    bad.write_bytes(b'{"id": "torn')
    report = diagnose(env)
    assert not report.ok and any("spool" in f.message and bad.stem in f.message for f in report.findings)
    report = fix(env)
    moved = env.paths.spool_dir / "damaged" / bad.name
    assert report.ok and not bad.exists() and moved.read_bytes() == b'{"id": "torn'
    assert any("damaged" in line for line in report.fixed)


# -- 7a: job files are parsed only when they change ------------------------------------------------


class CountingFS(FS):
    """Counts reads of job files and listings of the spool (each listing is one tick)."""

    def __init__(self) -> None:
        super().__init__(hook=self._count)
        self.reads: dict[str, int] = {}
        self.listings = 0
        self.cond = threading.Condition()

    def _count(self, op: str, path: str) -> None:
        with self.cond:
            if op == "read" and "/spool/" in path:
                name = os.path.basename(path)
                self.reads[name] = self.reads.get(name, 0) + 1
            elif op == "listdir" and path.endswith("/spool"):
                self.listings += 1
                self.cond.notify_all()

    def wait_listings(self, n: int, timeout: float = 10.0) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.listings >= n, timeout)


async def test_unchanged_job_files_are_not_parsed_again_on_every_tick(tmp_path: Path) -> None:
    fs = CountingFS()
    env = make_env(tmp_path, fs)
    m = manager(env, None, fs=fs, poll_interval=0.01)
    jobs = [await m.submit(turn(f"turn {k}")) for k in range(5)]
    await m.start()
    # wait_for and the loop both tick many times while nothing changes.
    assert not await m.wait_for(jobs[0].id, 0.3)
    assert await asyncio.to_thread(fs.wait_listings, 20)
    assert all(n <= 1 for n in fs.reads.values()), fs.reads
    # A file that changes is read again, once.
    job = m.spool.load(jobs[1].id)
    job.error = "changed by another process"
    m.spool.save(job)
    before = fs.reads.get(f"{job.id}.json", 0)
    n = fs.listings
    assert await asyncio.to_thread(fs.wait_listings, n + 5)
    await m.close(0)
    assert fs.reads[f"{job.id}.json"] - before <= 1


# -- 19: special files named like a job ------------------------------------------------------------


async def test_a_fifo_named_like_a_job_never_hangs_listing_flush_or_jobs(env: MemoryStores) -> None:
    env.paths.spool_dir.mkdir(parents=True, exist_ok=True)
    fifo = env.paths.spool_dir / f"{new_job_id()}.json"
    os.mkfifo(fifo)
    script = Script(answer(create("Fine")))
    m = manager(env, script)
    good = await m.submit(turn("x"))
    (entry,) = [e for e in m.entries() if e.id == fifo.stem]
    assert entry.job is None and "not a regular file" in (entry.problem or "")
    res = await asyncio.wait_for(m.flush(timeout=10), 15)
    await m.close(1)
    assert res.done == [good.id] and "not a regular file" in res.failed[fifo.stem]


# -- 21: approve after a partial reject ------------------------------------------------------------


def test_approve_after_a_partial_reject_neither_repeats_the_rejection_nor_exits_3(
    ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.unit.cli.test_memory_commands import _spool_job, create_op, run

    job = _spool_job(ws, held=[create_op("One"), create_op("Two")])
    code, out, err = run(ws, "reject", job.id, "0", monkeypatch=monkeypatch, capsys=capsys)
    assert code == 0
    code, out, err = run(ws, "approve", job.id, "1", monkeypatch=monkeypatch, capsys=capsys)
    assert (code, err) == (0, "") and out == "create project/project_knowledge_two.md\n"


# -- 21 and the API: another process's jobs produce events; a taken-over job names its successor ---


async def test_a_job_coalesced_by_another_process_reports_its_successor_and_events(env: MemoryStores) -> None:
    gate = Gate(answer(create("First")))
    second = Gate(answer(create("Both")))
    worker = manager(env, Script(gate, second))
    watcher = manager(env, None)  # the second window: never the worker here
    seen: list[Any] = []
    started = asyncio.Event()

    def on_event(event: Any) -> None:
        seen.append(event)
        if isinstance(event, JobStarted) and event.merged_from:
            started.set()

    watcher.subscribe(on_event)
    await worker.start()
    await watcher.start()
    assert worker.is_worker and not watcher.is_worker
    first = await worker.submit(turn("first"))
    await gate.entered.wait()
    a = await watcher.submit(turn("turn a"))
    b = await watcher.submit(turn("turn b"))
    gate.release.set()
    await second.entered.wait()
    await asyncio.wait_for(started.wait(), 10)  # the watcher saw the coalesced job start
    second.release.set()
    outcome = await watcher.wait_for(a.id, 10)
    assert await watcher.wait_for(b.id, 10)
    assert outcome.status == "done" and outcome.taken_over_by is not None
    successor = outcome.taken_over_by
    assert successor not in (a.id, b.id, first.id)
    # The watcher's subscriber saw the worker's progress, by job.
    for _ in range(100):
        if any(isinstance(e, JobApplied) and e.job_id == successor for e in seen):
            break
        await asyncio.sleep(0.02)
    kinds = [(type(e).__name__, e.job_id) for e in seen if hasattr(e, "job_id")]
    assert ("JobStarted", first.id) in kinds and ("JobApplied", first.id) in kinds
    assert ("JobTakenOver", a.id) in kinds and ("JobStarted", successor) in kinds
    assert ("JobApplied", successor) in kinds
    taken = next(e for e in seen if isinstance(e, JobTakenOver) and e.job_id == a.id)
    assert taken.successor == successor
    applied = next(e for e in seen if isinstance(e, JobApplied) and e.job_id == successor)
    assert [x.title for x in applied.applied] == ["Both"]
    # Its own submits are reported once, not echoed back by the watching.
    assert [e.job_id for e in seen if isinstance(e, JobQueued)].count(a.id) == 1
    await worker.close(1)
    await watcher.close(1)


async def test_a_job_whose_workspace_is_deleted_is_reported_orphaned(tmp_path: Path) -> None:
    gone = tmp_path / "other-ws"
    gone.mkdir()
    fs = CountingFS()
    env = make_env(tmp_path, fs)
    m = manager(env, None, fs=fs, poll_interval=0.01)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    assert await asyncio.to_thread(fs.wait_listings, 2)  # it has looked at the spool once before
    job = make_job(os.path.realpath(gone), [turn("elsewhere")])
    m.spool.submit(job)
    gone.rmdir()
    for _ in range(200):
        if any(isinstance(e, JobOrphaned) for e in events):
            break
        await asyncio.sleep(0.02)
    await m.close(0)
    (orphaned,) = [e for e in events if isinstance(e, JobOrphaned)]
    assert orphaned.job_id == job.id
    views = await m.jobs(all_workspaces=True)
    assert [(v.id, v.state) for v in views] == [(job.id, "orphaned")]


# -- the API: mode, jobs(), retry, dismiss ---------------------------------------------------------


async def test_set_mode_is_validated_and_switches_at_run_time(env: MemoryStores) -> None:
    script = Script(default="[]")
    m = manager(env, script, mode="off")
    await m.start()
    with pytest.raises(ValueError, match="memory mode"):
        m.set_mode("sometimes")  # type: ignore[arg-type]
    assert await m.submit(turn("not kept")) is None and not m.is_worker
    m.set_mode("auto")
    job = await m.submit(turn("kept"))
    assert job is not None and (await m.wait_for(job.id, 10)).status == "done"
    assert m.is_worker and len(script.requests) == 1
    m.set_mode("review")
    job = await m.submit(turn("held"))
    assert job is not None and job.mode == "review"
    await m.close(1)


async def test_jobs_shows_each_state_with_excerpt_and_timestamps(env: MemoryStores) -> None:
    m = manager(
        env, Script(CompletionError("401 bad key", retryable=False), answer(create("H"))), mode="review"
    )
    await m.start()
    failed = await m.submit(turn("this one fails"))
    await m.wait_for(failed.id, 10)
    held = await m.submit(turn("this one is held"))
    await m.wait_for(held.id, 10)
    await m.close(1)
    queued = await m.submit(turn("this one waits"))
    views = {v.id: v for v in await m.jobs()}
    assert views[failed.id].state == "failed" and "401" in (views[failed.id].reason or "")
    assert views[failed.id].attempts == 1 and views[failed.id].excerpt == "this one fails"
    assert views[held.id].state == "held" and [o.op.title for o in views[held.id].held_ops] == ["H"]
    assert views[queued.id].state == "queued" and views[queued.id].created.endswith("Z")
    assert all(v.updated >= v.created for v in views.values())
    with pytest.raises(ValueError):  # frozen: the app cannot change what it was given
        views[queued.id].state = "failed"  # type: ignore[misc]
    assert isinstance(views[queued.id], JobView)


async def test_retry_runs_a_failed_job_now_and_dismiss_removes_one_with_a_record(env: MemoryStores) -> None:
    script = Script(CompletionError("no", retryable=False), CompletionError("no", retryable=False), "[]")
    m = manager(env, script, max_batch_turns=1)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    one = await m.submit(turn("one"))
    await m.wait_for(one.id, 10)
    two = await m.submit(turn("two"))
    await m.wait_for(two.id, 10)
    assert [v.state for v in await m.jobs()] == ["failed", "failed"]
    await m.retry(one.id)
    assert (await m.wait_for(one.id, 10)).status == "done"
    await m.dismiss(two.id)
    assert await m.jobs() == []
    assert any(isinstance(e, JobDismissed) and e.job_id == two.id for e in events)
    assert any(e.label == f"dismiss {two.id}" and e.jobs == [two.id] for e in env.history())
    await m.close(1)


# -- nothing blocks the loop -----------------------------------------------------------------------


async def test_submit_approve_and_reject_keep_the_event_loop_free_while_the_disk_is_slow(
    tmp_path: Path,
) -> None:
    slow = {"on": False}

    def hook(op: str, path: str) -> None:
        if slow["on"]:
            time.sleep(0.05)  # a call run on the loop would hold it for several of these

    fs = FS(hook=hook)
    env = make_env(tmp_path, fs)
    m = manager(env, Script(answer(create("A"), create("B"))), fs=fs, mode="review")
    await m.start()
    job = await m.submit(turn("x"))
    await m.wait_for(job.id, 10)
    await m.close(1)
    lateness: list[float] = []
    stop = asyncio.Event()

    async def heartbeat() -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            t = loop.time()
            await asyncio.sleep(0.005)
            lateness.append(loop.time() - t - 0.005)

    beat = asyncio.create_task(heartbeat())
    slow["on"] = True
    m2 = manager(env, None, fs=fs)
    await m2.submit(turn("y"))
    await m2.reject(job.id, [0])
    await m2.approve(job.id)
    slow["on"] = False
    stop.set()
    await beat
    assert len(lateness) > 10 and max(lateness) < 0.15, max(lateness)


# -- the pending screen's needs ------------------------------------------------------------------


async def test_a_partial_approval_leaves_a_job_whose_view_names_the_job_it_split_from(
    env: MemoryStores,
) -> None:
    m = manager(env, Script(answer(create("A"), create("B"))), mode="review")
    await m.start()
    job = await m.submit(turn("keep A and B"))
    await m.wait_for(job.id, 10)
    await m.approve(job.id, [0])
    [rest] = await m.jobs()
    assert rest.id != job.id and rest.split_from == job.id and [h.op.title for h in rest.held_ops] == ["B"]
    await m.close(1)


async def test_turn_text_shows_a_failed_jobs_turn_before_it_is_dismissed(env: MemoryStores) -> None:
    m = manager(env, Script(CompletionError("no", retryable=False)))
    await m.start()
    job = await m.submit(turn("the words of this turn"))
    await m.wait_for(job.id, 10)
    assert "user: the words of this turn" in await m.turn_text(job.id)
    await m.dismiss(job.id)
    with pytest.raises(ReviewError, match="no spooled job"):
        await m.turn_text(job.id)
    await m.close(1)


# -- a merge answer without JSON is retried within the job's budget, never dropped ------------------


async def test_a_merge_answer_without_json_is_asked_again_while_the_budget_lasts_and_the_update_applies(
    env: MemoryStores,
) -> None:
    write_note(env, Level.PROJECT, "project_knowledge_a.md", "A", "old a")
    script = Script(
        answer(update("project_knowledge_a.md", "new a")),
        "Sure, I merged it for you.",
        "Here it is: the merged note.",
        merge_answer({"op0": "old a, new a"}),
    )
    m = manager(env, script)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("x"))
    assert (await m.wait_for(job.id, 10)).status == "done"
    await m.close(1)
    first, *again = script.merges
    assert len(again) == 2 and all(r.prompt.endswith(MERGE_REASK_NOTE) for r in again)
    assert not first.prompt.endswith(MERGE_REASK_NOTE)
    assert notes(env)["project_knowledge_a.md"].endswith("old a, new a\n")
    applied = next(e for e in events if isinstance(e, JobApplied))
    assert applied.rejected == () and [a.filename for a in applied.applied] == ["project_knowledge_a.md"]


async def test_a_merge_that_never_answers_json_fails_the_job_kept_with_its_update_and_retry_merges_it(
    env: MemoryStores,
) -> None:
    write_note(env, Level.PROJECT, "project_knowledge_a.md", "A", "old a")
    prose = "I have merged the note, it looks good."
    script = Script(answer(update("project_knowledge_a.md", "new a")), prose, prose, prose)
    m = manager(env, script)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    job = await m.submit(turn("x"))
    outcome = await m.wait_for(job.id, 10)
    assert outcome.status == "failed" and "merge answer held no JSON" in outcome.reason, outcome
    assert "3 attempts used" in outcome.reason
    assert len(script.merges) == 3 and len(script.extracts) == 1
    # Kept, visible and retryable; nothing was written, nothing recorded as rejected.
    (kept,) = spooled(env)
    assert kept.id == job.id and kept.state == "failed" and kept.error_kind == "merge" and kept.retryable
    assert kept.raw_answer is not None and not kept.merge_raw
    (failed,) = [e for e in events if isinstance(e, JobFailed)]
    assert failed.retryable and "no JSON" in failed.reason
    assert not any(isinstance(e, JobApplied) for e in events)
    assert notes(env)["project_knowledge_a.md"].endswith("old a\n") and env.history() == []
    (view,) = await m.jobs()
    assert view.state == "failed" and "merge answer held no JSON" in (view.reason or "")

    # A retry asks for the merge again (the extraction answer is kept) and writes it.
    script.items.append(merge_answer({"op0": "old a, new a"}))
    await m.retry(job.id)
    assert (await m.wait_for(job.id, 10)).status == "done"
    await m.close(1)
    assert len(script.extracts) == 1 and len(script.merges) == 4
    assert notes(env)["project_knowledge_a.md"].endswith("old a, new a\n")


async def test_provider_failures_and_merge_answers_without_json_share_one_budget(env: MemoryStores) -> None:
    write_note(env, Level.PROJECT, "project_knowledge_a.md", "A", "old a")
    sleeps = Sleeps()
    script = Script(
        CompletionError("overloaded"),  # 1
        answer(update("project_knowledge_a.md", "new a")),
        "no JSON here",  # 2
        "still no JSON",  # 3: the budget is spent
        merge_answer({"op0": "never asked for"}),
    )
    m = manager(env, script, sleep=sleeps)
    await m.start()
    job = await m.submit(turn("x"))
    outcome = await m.wait_for(job.id, 10)
    await m.close(1)
    assert outcome.status == "failed" and "3 attempts used in all" in outcome.reason, outcome
    assert len(script.requests) == 4 and sleeps.delays == [1]
    assert notes(env)["project_knowledge_a.md"].endswith("old a\n")


# -- one retry count: the attempt of the job's budget in this process -----------------------------


async def test_a_retried_jobs_retry_count_is_its_fresh_budgets_in_the_view_the_pending_row_and_the_panel(
    env: MemoryStores,
) -> None:
    from app.tui.panel.state import job_line
    from tests.support.memviews import pending_state

    # Three failures in an earlier process: the job's lifetime count is 3, its new budget is fresh.
    old = make_job(env.paths.workspace, [turn("x")])
    old.state, old.attempts, old.error, old.error_kind = (
        "failed",
        3,
        "extract request failed: down",
        "provider",
    )
    manager(env, None).spool.submit(old)
    entered, release = asyncio.Event(), asyncio.Event()

    async def held_sleep(delay: float) -> None:
        entered.set()
        await release.wait()

    m = manager(env, Script(CompletionError("overloaded"), answer(create("Later"))), sleep=held_sleep)
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    await m.retry(old.id)
    await entered.wait()
    (retry,) = [e for e in events if isinstance(e, JobRetrying)]
    assert (retry.attempt, retry.max_attempts) == (1, 3)
    (view,) = await m.jobs()
    assert view.state == "retrying" and view.attempts == 4
    # The pending row and the side panel's line count this budget's attempts, as the event does.
    (row,) = pending_state(env, [view], [], [], "auto").jobs
    assert (row.attempt, row.max_attempts) == (2, 3)
    assert job_line(view).line.startswith("retrying 2/3")
    assert (view.attempt, view.max_attempts) == (2, 3)
    # The reason names no count of its own that could disagree with "2/3".
    assert view.reason == "extract request failed: overloaded"
    release.set()
    assert (await m.wait_for(old.id, 10)).status == "done"
    await m.close(1)


# -- a job keeps its created time to the end --------------------------------------------------------


async def test_a_retried_job_keeps_its_created_time_in_its_applied_event_and_its_pending_row(
    env: MemoryStores,
) -> None:
    from app.tui.screens.applied_record import applied_record
    from tests.support.memviews import pending_state

    old = make_job(env.paths.workspace, [turn("x")])
    old.created = "2026-01-01T00:00:00Z"
    old.state, old.error, old.error_kind = "failed", "extract request failed: down", "provider"
    manager(env, None).spool.submit(old)
    m = manager(env, Script(answer(create("Later"))))
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    retried = await m.retry(old.id)
    assert retried.created == "2026-01-01T00:00:00Z"
    assert (await m.wait_for(old.id, 10)).status == "done"
    await m.close(1)
    (applied,) = [e for e in events if isinstance(e, JobApplied)]
    (row,) = pending_state(env, [], [], [applied_record(applied, "x")], "auto").jobs
    assert row.state == "applied" and row.created == "2026-01-01T00:00:00Z"
    assert applied.created == "2026-01-01T00:00:00Z"


async def test_approved_and_rejected_jobs_report_their_created_time(env: MemoryStores) -> None:
    m = manager(env, Script(answer(create("A")), answer(create("B"))), mode="review")
    events: list[Any] = []
    m.subscribe(events.append)
    await m.start()
    one = await m.submit(turn("one"))
    await m.wait_for(one.id, 10)
    two = await m.submit(turn("two"))
    await m.wait_for(two.id, 10)
    await m.approve(one.id)
    await m.reject(two.id)
    await m.close(1)
    done = {e.job_id: e for e in events if isinstance(e, JobApplied)}
    assert done[one.id].created == one.created and not done[one.id].all_refused
    assert done[two.id].created == two.created and done[two.id].all_refused


async def test_a_job_another_process_completed_is_reported_with_its_created_time(env: MemoryStores) -> None:
    gate = Gate(answer(create("First")))
    worker = manager(env, Script(gate))
    watcher = manager(env, None)
    seen: list[Any] = []
    started, finished = asyncio.Event(), asyncio.Event()

    def on_event(event: Any) -> None:
        seen.append(event)
        if isinstance(event, JobStarted):
            started.set()
        if isinstance(event, JobApplied):
            finished.set()

    watcher.subscribe(on_event)
    await watcher.start()
    await worker.start()
    job = await worker.submit(turn("first"))
    await gate.entered.wait()
    await asyncio.wait_for(started.wait(), 10)  # the watcher has seen the job
    gate.release.set()
    await asyncio.wait_for(finished.wait(), 10)  # learnt from the history by the watcher's tick
    (applied,) = [e for e in seen if isinstance(e, JobApplied)]
    assert applied.job_id == job.id and applied.created == job.created
    await worker.close(1)
    await watcher.close(1)

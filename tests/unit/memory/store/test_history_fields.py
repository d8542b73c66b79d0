"""History entries say what made them (``kind``) and which queued jobs a memory job coalesced
(``took_over``) as fields, written in the history file and read back; an entry written before
those fields existed reads too, both derived once from its label."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.constants import MANUAL_SOURCE, Level
from memory.events import JobApplied, JobDismissed, JobTakenOver
from memory.jobs.jobwatch import JobWatch
from memory.jobs.spool import Spool
from memory.model import HistoryEntry
from memory.store.history import entry_from_json
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env, write_note
from tests.unit.memory.jobs.test_manager import Script, answer, create, manager, turn

pytestmark = pytest.mark.timeout(60)

A, B, C = "00000000000000000001-aaaaaaaa", "00000000000000000002-bbbbbbbb", "00000000000000000003-cccccccc"


def _files(env: MemoryStores) -> list[dict[str, object]]:
    hdir = env.paths.history_dir
    return [json.loads(p.read_bytes()) for p in sorted(hdir.glob("*.json"))]


def _old(env: MemoryStores, name: str, **fields: object) -> None:
    """A history file as an app wrote it before ``kind`` named more than batch/undo."""
    raw = {
        "txid": name,
        "time": "2024-01-01T00:00:00Z",
        "workspace": str(env.paths.workspace),
        "kind": "batch",
        "label": "",
        "source": "s",
        "jobs": [],
        "applied": [],
        "rejected": [],
        "conflicts": [],
        "dropped_cites": [],
        "changes": [],
        "undone_by": None,
        "undo_of": None,
        **fields,
    }
    env.paths.history_dir.mkdir(parents=True, exist_ok=True)
    (env.paths.history_dir / f"{name}.json").write_text(json.dumps(raw))


def test_kind_and_took_over_are_written_in_the_file_and_read_back(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    op = create("Build with make", "Run make.")
    env.apply([(0, op)], source="sess-1", label="memory job x", kind="turn", took_over=[A, B])
    env.apply(
        [(0, create("Tabs", "Use tabs.", level="user", type_="user_preference"))],
        source=MANUAL_SOURCE,
        label="card created",
    )
    [turn_file, manual_file] = _files(env)
    assert (turn_file["kind"], turn_file["took_over"]) == ("turn", [A, B])
    assert (manual_file["kind"], manual_file["took_over"]) == ("manual", [])  # a person's edit
    [turn_entry, manual_entry] = env.history()
    assert (turn_entry.kind, turn_entry.took_over) == ("turn", [A, B])
    assert manual_entry.kind == "manual"
    assert entry_from_json(turn_entry.model_dump_json().encode()) == turn_entry


async def test_a_coalesced_jobs_batch_records_the_jobs_it_took_over(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    m = manager(env, Script(answer(create("Build with make", "Run make."))))
    first = await m.submit(turn("we build with make"))
    second = await m.submit(turn("and test with make test"))
    assert first is not None and second is not None
    await m.start()
    assert await m.wait_for(first.id, 10) and await m.wait_for(second.id, 10)
    await m.close(1)
    [entry] = env.history()
    assert entry.kind == "turn" and sorted(entry.took_over) == sorted([first.id, second.id])
    assert JobWatch.entry_for([entry], second.id) == (entry, entry.jobs[0])


async def test_review_and_undo_entries_say_their_kind(tmp_path: Path) -> None:
    from memory.constants import MemoryMode

    env = make_env(tmp_path)
    m = manager(env, Script(answer(create("One", "1."), create("Two", "2."))), mode=MemoryMode.REVIEW)
    job = await m.submit(turn("remember one and two"))
    assert job is not None
    await m.start()
    assert await m.wait_for(job.id, 10)
    await m.approve(job.id, [0])
    held = [j for j in m.pending() if j.state == "held"]
    await m.reject(held[0].id)
    await m.close(1)
    env.undo()
    assert [e.kind for e in env.history()] == ["approve", "reject", "undo"]


def test_an_old_entry_reads_with_its_kind_and_took_over_from_its_label(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    # The excerpt after ": " is a person's words: its "took over" names no job.
    _old(env, "t1", label=f"memory job {A} took over {B} {C}: the job took over 0000-x", jobs=[A])
    _old(env, "t2", label=f"memory job {C} (consolidation of the project store)", jobs=[C])
    _old(env, "t3", label=f"dismiss {B}", jobs=[B])
    _old(env, "t4", label=f"approve {A}", jobs=[A])
    _old(env, "t5", label="card created", source=MANUAL_SOURCE)
    _old(env, "t6", label="something else")
    _old(env, "t7", kind="undo", label="undo of t5", undo_of="t5")
    got = [(e.txid, e.kind, e.took_over) for e in env.history()]
    assert got == [
        ("t1", "turn", [B, C]),
        ("t2", "consolidation", []),
        ("t3", "dismiss", []),
        ("t4", "approve", []),
        ("t5", "manual", []),
        ("t6", "batch", []),
        ("t7", "undo", []),
    ]
    entries = list(reversed(env.history()))  # newest first, as the watch reads them
    assert JobWatch.entry_for(entries, B) == (entries[4], None)  # t3: the batch that removed it
    assert JobWatch.entry_for(entries[5:], B) == (entries[-1], A)  # t1: the batch that took it over
    assert JobWatch.entry_for(entries, "0000-x") == (None, None)


def test_an_old_entry_still_tells_the_watch_what_became_of_a_job(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    write_note(env, Level.PROJECT, "project_knowledge_a.md", "A", "a")
    _old(
        env,
        "t1",
        label=f"memory job {A} took over {B}: hi",
        jobs=[A],
        applied=[{"index": 0, "action": "create", "level": "project", "filename": "project_knowledge_a.md"}],
    )
    _old(env, "t2", label=f"dismiss {C}", jobs=[C])
    watch = JobWatch(env, Spool(env.paths), str(env.paths.workspace))
    events = watch.report_gone([B, C])
    assert events[0] == JobTakenOver(job_id=B, successor=A)
    assert isinstance(events[1], JobApplied) and events[1].job_id == A and len(events[1].applied) == 1
    assert events[2] == JobDismissed(job_id=C)


def test_an_old_entry_can_still_be_undone(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.apply([(0, create("Build with make", "Run make."))], source="s", label="memory job x")
    [path] = env.paths.history_dir.glob("*.json")
    raw = json.loads(path.read_bytes())
    del raw["took_over"]
    raw["kind"] = "batch"
    path.write_text(json.dumps(raw))  # as an older app wrote it
    env.undo()
    [done, undo] = env.history()
    assert (done.kind, undo.kind) == ("turn", "undo") and done.undone_by == undo.txid


def test_a_history_file_that_is_not_an_entry_is_refused() -> None:
    for raw in (b"[]", b"{", b'{"txid": 1}', b"\xff"):
        with pytest.raises(ValueError):
            entry_from_json(raw)
    assert isinstance(
        entry_from_json(HistoryEntry(txid="t", time="", workspace="/w").model_dump_json().encode()),
        HistoryEntry,
    )

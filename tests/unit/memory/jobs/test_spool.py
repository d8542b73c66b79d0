"""The durable job spool: one private file per job, oldest first, never lost silently."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from memory.jobs.spool import (
    STALE_TEMP_SECONDS,
    CorruptJob,
    HeldOp,
    Job,
    JobNotFound,
    Spool,
    is_job_id,
    make_job,
    new_job_id,
    successor_id,
)
from memory.model import Turn, TurnMessage
from memory.store.fs import FS, TEMP_PREFIX
from memory.store.paths import Paths

# `ws` here is an empty folder, not the shared git work tree.
pytestmark = pytest.mark.plain_ws


def turn(text: str, session: str = "s1") -> Turn:
    return Turn(
        messages=[TurnMessage(role="user", text=text), TurnMessage(role="assistant", text="ok")],
        session=session,
    )


@pytest.fixture
def spool(tmp_path: Path, ws: Path) -> Spool:
    return Spool(Paths.for_workspace(ws, tmp_path / "home"))


def test_submit_is_durable_private_and_round_trips(tmp_path: Path, ws: Path) -> None:
    fs = FS(record=True)
    sp = Spool(Paths.for_workspace(ws, tmp_path / "home"), fs)
    job = make_job(ws, [turn("remember: tests run with make test")], session="s1")
    path = sp.submit(job)
    assert path == tmp_path / "home" / "spool" / f"{job.id}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # Written and fsynced under a temp name, linked to its name (never over another file), then
    # the folder fsynced: the name appears only with the whole content and survives a crash.
    ops = [
        (e[0], Path(e[1]).name.startswith(TEMP_PREFIX))
        for e in fs.log
        if path.parent in (Path(e[1]), Path(e[1]).parent)
    ]
    assert ops[-6:] == [
        ("create", True),
        ("write", True),
        ("fsync", True),
        ("link", False),
        ("unlink", True),
        ("fsync_dir", False),
    ]
    assert [e[1] for e in fs.log if e[0] == "link"] == [str(path)]
    assert sp.load(job.id) == job
    with pytest.raises(FileExistsError):
        sp.submit(job)  # never overwrites


def test_ids_sort_oldest_first_and_successors_keep_the_place() -> None:
    ids = [new_job_id() for _ in range(200)]
    assert ids == sorted(ids) and len(set(ids)) == 200
    assert all(is_job_id(i) for i in ids)
    succ = successor_id(ids[10])
    assert is_job_id(succ) and ids[9] < succ < ids[11]
    assert not is_job_id("../etc/passwd") and not is_job_id("123")


def test_list_is_oldest_first_and_filters_by_workspace(spool: Spool, ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    jobs = [make_job(ws, [turn(f"t{i}")]) for i in range(3)]
    foreign = make_job(os.path.realpath(other), [turn("elsewhere")])
    for j in [jobs[1], foreign, jobs[0], jobs[2]]:
        spool.submit(j)
    assert [e.id for e in spool.list(ws)] == [j.id for j in jobs]
    assert len(spool.list()) == 4
    assert all(e.status == "queued" for e in spool.list())


def test_save_is_atomic_and_never_recreates_a_completed_job(spool: Spool, ws: Path) -> None:
    job = make_job(ws, [turn("x")])
    spool.submit(job)
    job.raw_answer = "[]"
    job.snapshot_hashes = {"project/a.md": "0" * 64}
    spool.save(job)
    assert spool.load(job.id).raw_answer == "[]"
    assert stat.S_IMODE(spool.path(job.id).stat().st_mode) == 0o600
    spool.delete(job.id)
    with pytest.raises(JobNotFound):
        spool.save(job)
    assert not spool.path(job.id).exists()
    with pytest.raises(JobNotFound):
        spool.load(job.id)


def test_orphaned_job_is_listed_but_marked(spool: Spool, tmp_path: Path, ws: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    job = make_job(os.path.realpath(gone), [turn("lost")])
    spool.submit(job)
    gone.rmdir()
    (entry,) = spool.list()
    assert entry.orphaned and entry.status == "orphaned" and entry.job == job
    assert spool.list(include_orphans=False) == []
    assert spool.list(ws) == []


def test_corrupt_files_are_listed_with_a_reason_and_kept(spool: Spool, ws: Path) -> None:
    good = make_job(ws, [turn("fine")])
    spool.submit(good)
    d = spool.dir
    garbage = d / f"{new_job_id()}.json"
    garbage.write_bytes(b"\x00not json{")
    schema = d / f"{new_job_id()}.json"
    schema.write_text(json.dumps({"id": "x", "workspace": str(ws)}))
    other_id = new_job_id()
    mismatch = d / f"{new_job_id()}.json"
    mismatch.write_text(good.model_copy(update={"id": other_id}).model_dump_json())
    badname = d / "hello.json"
    badname.write_text("{}")
    entries = {e.path.name: e for e in spool.list(ws)}
    assert entries[f"{good.id}.json"].status == "queued"
    for p in (garbage, schema, mismatch, badname):
        e = entries[p.name]
        assert e.status == "corrupt" and e.job is None and e.problem
        assert p.exists()  # never deleted silently
    assert "file names job" in entries[mismatch.name].problem
    with pytest.raises(CorruptJob):
        spool.load(garbage.name.removesuffix(".json"))


def test_superseded_jobs_are_cleaned_and_never_listed(spool: Spool, ws: Path) -> None:
    a, b, c = (make_job(ws, [turn(t)]) for t in "abc")
    for j in (a, b, c):
        spool.submit(j)
    combined = Job(
        id=successor_id(a.id),
        workspace=str(ws),
        created=a.created,
        turns=[*a.turns, *b.turns],
        merged_from=[a.id, b.id],
    )
    spool.submit(combined)  # a crash here leaves a and b on disk: superseded
    assert [e.id for e in spool.list(ws)] == [combined.id, c.id]
    assert not spool.path(a.id).exists() and not spool.path(b.id).exists()
    assert spool.successors() == {a.id: combined.id, b.id: combined.id}


def test_split_job_is_hidden_while_its_parent_exists(spool: Spool, ws: Path) -> None:
    parent = make_job(ws, [turn("p")], mode="review")
    parent.state = "held"
    spool.submit(parent)
    child = parent.model_copy(update={"id": successor_id(parent.id), "split_from": parent.id, "held_ops": []})
    spool.submit(child)
    assert [e.id for e in spool.list(ws)] == [parent.id]
    assert {e.id for e in spool.list(ws, include_split=True)} == {parent.id, child.id}
    spool.delete(parent.id)
    assert [e.id for e in spool.list(ws)] == [child.id]


def test_resolve_accepts_unique_prefix_or_suffix(spool: Spool, ws: Path) -> None:
    j1, j2 = make_job(ws, [turn("1")]), make_job(ws, [turn("2")])
    spool.submit(j1)
    spool.submit(j2)
    assert spool.resolve(j1.id) == j1.id
    assert spool.resolve(j2.id[-8:]) == j2.id
    assert spool.resolve(j1.id + ".json") == j1.id
    with pytest.raises(JobNotFound, match="ambiguous"):
        spool.resolve(j1.id[:5])
    with pytest.raises(JobNotFound):
        spool.resolve("zzzz")
    with pytest.raises(JobNotFound):
        spool.path("../../x")


def test_stale_temp_files_are_removed_fresh_ones_kept(spool: Spool, ws: Path) -> None:
    spool.submit(make_job(ws, [turn("x")]))
    old = spool.dir / f"{TEMP_PREFIX}old"
    new = spool.dir / f"{TEMP_PREFIX}new"
    old.write_text("x")
    new.write_text("y")
    past = time.time() - STALE_TEMP_SECONDS - 10
    os.utime(old, (past, past))
    assert len(spool.list()) == 1
    assert not old.exists() and new.exists()


def test_job_model_fields_and_excerpt(ws: Path) -> None:
    job = make_job(ws, [turn("  first   line\nsecond " + "x" * 200)], session="s9", mode="review")
    assert job.state == "queued" and job.mode == "review" and job.session == "s9"
    assert job.attempts == 0 and job.raw_answer is None and job.merged_from == []
    assert job.excerpt(20) == "first line second x…" and len(job.excerpt(20)) == 20
    assert "sk-ant" not in make_job(ws, [turn("key sk-ant-api03-" + "A" * 40)]).excerpt()
    assert job.turn_bytes() == len(job.turns[0].messages[0].text.encode()) + 2
    from memory.constants import Action, Level
    from memory.model import Operation

    held = HeldOp(index=2, op=Operation(action=Action.DELETE, level=Level.USER, filename="a.md"))
    job.held_ops = [held]
    assert Job.model_validate_json(job.model_dump_json()) == job


def test_a_job_file_of_the_first_version_still_loads(spool: Spool, ws: Path) -> None:
    # Dropped fields (conflicts, a held op's status) are ignored; one merge answer becomes one part.
    job = make_job(ws, [turn("x")])
    data = json.loads(job.model_dump_json())
    data.update(
        merge_raw='{"merged": []}',
        conflicts=[],
        held_ops=[
            {"index": 0, "op": {"action": "delete", "level": "user", "filename": "a.md"}, "status": "held"}
        ],
    )
    spool.dir.mkdir(parents=True)
    spool.path(job.id).write_text(json.dumps(data))
    loaded = spool.load(job.id)
    assert loaded.merge_raw is not None and [p.keys for p in loaded.merge_raw] == [["*"]]
    assert loaded.held_ops[0].index == 0


def test_a_fifo_named_like_a_job_is_listed_as_damaged_without_being_opened(spool: Spool, ws: Path) -> None:
    spool.dir.mkdir(parents=True)
    fifo = spool.dir / f"{new_job_id()}.json"
    os.mkfifo(fifo)
    (entry,) = spool.list(ws)
    assert entry.status == "corrupt" and "not a regular file" in (entry.problem or "")
    with pytest.raises(CorruptJob):
        spool.load(fifo.stem)
    moved = spool.quarantine(fifo.name)
    assert stat.S_ISFIFO(moved.lstat().st_mode) and spool.list() == []

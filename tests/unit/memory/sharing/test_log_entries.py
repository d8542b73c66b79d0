"""The log model (memory/sharing/log.py): git log records read from NUL-separated fields and
sanitized, batches filtered by level and card, one block per entry; a model batch's label names
its turn, and that excerpt (a person's words) is never read as the jobs a batch took over (an
entry written before ``took_over`` was a field has it read from its label once)."""

from __future__ import annotations

import json
from pathlib import Path

from memory.constants import Action, Level
from memory.jobs.jobwatch import JobWatch
from memory.jobs.pipeline import job_label
from memory.jobs.spool import Job
from memory.model import AppliedOp, Change, Conflict, HistoryEntry, Rejection, Turn, TurnMessage
from memory.sharing.log import batch_entries, format_entry, git_entries, parse_git_log
from memory.store.history import entry_from_json
from memory.store.stores import MemoryStores
from tests.support.gittools import commit_all, git
from tests.support.memtools import make_env, write_note


def record(short: str, at: str, name: str, subject: str) -> str:
    return f"{short}\x00{at}\x00{name}\x00{subject}\x00\n"


def test_git_records_are_sanitized_and_returned_oldest_first() -> None:
    out = record(
        "abc1234", "1700000100", "Eve\x1b[2J\u202e", "add \x1b]52;c;cHduZWQ=\x07cards\tnow"
    ) + record("0123abc", "1700000000", "", "first")
    got = parse_git_log(out, Level.PROJECT)
    assert got is not None
    assert [e.ref for e in got] == ["0123abc", "abc1234"]
    assert got[1].who == "Eve" and got[1].head == "add cards now" and got[1].time == "2023-11-14T22:15:00Z"
    assert got[0].who == "someone"
    assert format_entry(got[1]) == "2023-11-14T22:15:00Z  project store commit abc1234 by Eve: add cards now"


def test_a_record_of_another_shape_is_refused_not_guessed() -> None:
    assert parse_git_log(record("nothex!", "1", "a", "b"), Level.PROJECT) is None
    assert parse_git_log(record("abc1234", "soon", "a", "b"), Level.PROJECT) is None
    assert parse_git_log("abc1234\x001\x00a\x00", Level.PROJECT) is None
    assert parse_git_log("", Level.PROJECT) == []


def entry(txid: str, level: Level, name: str, **kw: object) -> HistoryEntry:
    return HistoryEntry(
        txid=txid,
        time=f"2026-01-01T00:00:0{txid[-1]}Z",
        workspace="/w",
        source="manual",
        label=f"label {txid}",
        applied=[AppliedOp(index=0, action=Action.UPDATE, level=level, filename=name, title="T")],
        changes=[Change(level=level, filename=name, after_sha="0" * 64)],
        **kw,  # type: ignore[arg-type]
    )


def test_batches_are_kept_by_level_and_card() -> None:
    rejected = HistoryEntry(
        txid="t3",
        time="2026-01-01T00:00:03Z",
        workspace="/w",
        jobs=["j3"],
        rejected=[
            Rejection(
                index=0, reason="op 0: too long", op={"action": "create", "level": "user", "filename": "u.md"}
            )
        ],
    )
    history = [entry("t1", Level.PROJECT, "p.md"), entry("t2", Level.USER, "u.md"), rejected]
    assert [e.ref for e in batch_entries(history, None, None)] == ["t1", "t2", "t3"]
    assert [e.ref for e in batch_entries(history, Level.PROJECT, None)] == ["t1"]
    assert [e.ref for e in batch_entries(history, Level.USER, "u.md")] == ["t2", "t3"]
    assert batch_entries(history, Level.PROJECT, "u.md") == []


def test_a_batch_block_names_its_jobs_ops_reasons_conflicts_and_undo() -> None:
    e = entry(
        "t1",
        Level.PROJECT,
        "p.md",
        jobs=["j1"],
        undone_by="t9",
        rejected=[Rejection(index=1, reason="no title")],
        conflicts=[Conflict(index=2, level=Level.PROJECT, filename="q.md", reason="changed since")],
    )
    assert format_entry(batch_entries([e], None, None)[0]) == "\n".join(
        [
            "2026-01-01T00:00:01Z  batch t1 (manual): label t1",
            "    job j1",
            "    update project/p.md  T",
            "    rejected: op 1: no title",
            "    conflict: op 2: project/q.md: changed since",
            "    undone by t9",
        ]
    )


def job(text: str, merged_from: list[str] | None = None) -> Job:
    turn = Turn(messages=[TurnMessage(role="user", text=text), TurnMessage(role="assistant", text="ok")])
    return Job(
        id="00000000000000000001-aaaaaaaa",
        workspace="/w",
        created="",
        turns=[turn],
        merged_from=merged_from or [],
    )


def _old_entry(label: str) -> HistoryEntry:
    """A history file's entry as written before ``kind`` named a job's batch and ``took_over`` was a field."""
    raw = {
        "txid": "t",
        "time": "",
        "workspace": "/w",
        "kind": "batch",
        "label": label,
        "source": "s",
        "jobs": ["00000000000000000001-aaaaaaaa"],
    }
    return entry_from_json(json.dumps(raw).encode())


def test_a_model_batch_label_carries_its_turn_excerpt() -> None:
    assert job_label(job("what \x1b[31mcolour is the sky")) == (
        "memory job 00000000000000000001-aaaaaaaa: what colour is the sky"
    )
    took = job_label(job("hi", ["00000000000000000000-bbbbbbbb"]))
    assert took == "memory job 00000000000000000001-aaaaaaaa took over 00000000000000000000-bbbbbbbb: hi"
    history = [_old_entry(took)]
    assert JobWatch.entry_for(history, "00000000000000000000-bbbbbbbb")[1] == "00000000000000000001-aaaaaaaa"


def test_an_excerpt_that_says_took_over_claims_no_job() -> None:
    victim = "00000000000000000000-cccccccc"
    label = job_label(job(f"note: the job took over {victim} yesterday"))
    history = [_old_entry(label)]
    assert history[0].took_over == [] and history[0].kind == "turn"
    assert JobWatch.entry_for(history, victim) == (None, None)


def test_the_user_store_log_is_its_own_repository_never_a_home_in_git(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_note(stores, Level.USER, "user_preference_tabs.md", "Tabs", "use tabs")
    home = stores.paths.home
    git(home, "init", "-q", "-b", "main")  # a home folder in git is not the user store's repository
    commit_all(home, "dotfiles")
    assert git_entries(stores, Level.USER) == ([], None)
    user = stores.user.dir
    git(user, "init", "-q", "-b", "main")
    assert git_entries(stores, Level.USER) == ([], None)  # no commit yet: nothing, and no error
    commit_all(user, "sync: tabs")
    found, problem = git_entries(
        MemoryStores(stores.paths.workspace, home), Level.USER, "user_preference_tabs.md"
    )
    assert problem is None and [e.head for e in found] == ["sync: tabs"] and found[0].level is Level.USER

"""Checkpoints of the agent's file edits and rewind (app/agent/undo/checkpoints.py, app/agent/undo/rewind.py):
the real file tools write through the Recorder a session gives them; rewinds go through the
session log as the CLI and the app use it."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.agent.conversation.blocks import Message
from app.agent.conversation.session import Session
from app.agent.conversation.session_store import SessionStore
from app.agent.tools import ToolContext, run_tool
from app.agent.undo.checkpoints import CheckpointError, CheckpointStore, Recorder, SessionCheckpoints
from app.agent.undo.rewind import RewindError, apply_rewind, list_turns, plan_rewind, turn_prompt


class Bench:
    """A session of a workspace whose file tools keep checkpoints, as the runtime wires them."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws
        self.sessions = SessionStore()
        self.session: Session = self.sessions.create(ws)
        self.store = CheckpointStore()
        self.cp: SessionCheckpoints = self.store.session(self.session.id, ws)
        self.ctx = ToolContext(workspace=ws, checkpoints=Recorder(self.cp, lambda: self.session.turns))

    def turn(self, prompt: str, *calls: tuple[str, dict[str, Any]], answer: str = "done") -> None:
        self.session.begin_turn(prompt)
        self.session.append(Message(role="user", content=prompt))
        for name, inp in calls:
            result = asyncio.run(run_tool(name, inp, self.ctx))
            assert not result.is_error, result.content
        self.session.append(Message(role="assistant", content=answer))
        self.session.end_turn("completed")

    def rewind(self, turn: int, *, files: bool = True, conversation: bool = True, force: bool = False) -> int:
        plan = plan_rewind(self.session, self.store, turn, files=files, conversation=conversation)
        return apply_rewind(self.session, self.store, plan, force=force).entry

    def blobs(self) -> list[str]:
        return sorted(os.listdir(self.cp.blobs))


@pytest.fixture
def bench(plain_ws: Path) -> Iterator[Bench]:
    b = Bench(plain_ws)
    yield b
    b.session.close()


ORIGINAL = "first line\r\nsecond line: héllo\r\nthird line\r\n".encode()


def _edit(path: str, old: str, new: str) -> tuple[str, dict[str, Any]]:
    return "edit_file", {"path": path, "old_string": old, "new_string": new}


def _write(path: str, content: str) -> tuple[str, dict[str, Any]]:
    return "write_file", {"path": path, "content": content}


def test_an_edit_then_a_write_and_a_created_file_go_back_exactly(bench: Bench) -> None:
    a = bench.ws / "a.txt"
    a.write_bytes(ORIGINAL)
    a.chmod(0o750)
    bench.turn(
        "change a and add b",
        _edit("a.txt", "second line", "2nd line"),
        _write("a.txt", "all new\n"),
        _write("sub/b.txt", "created\n"),
    )
    assert a.read_bytes() == b"all new\n" and (bench.ws / "sub" / "b.txt").exists()
    [line] = list_turns(bench.session.path, bench.cp)
    assert (line.turn, line.text, line.files, line.bash) == (
        1,
        "change a and add b",
        ("a.txt", "sub/b.txt"),
        False,
    )

    plan = plan_rewind(bench.session, bench.store, 1, files=True, conversation=False)
    assert [(f.path, f.action, f.conflict) for f in plan.files] == [
        ("a.txt", "restore", None),
        ("sub/b.txt", "delete", None),
    ]
    result = apply_rewind(bench.session, bench.store, plan)
    assert a.read_bytes() == ORIGINAL
    assert a.stat().st_mode & 0o777 == 0o750
    assert not (bench.ws / "sub" / "b.txt").exists()
    assert (result.entry, result.restored, result.deleted) == (2, ("a.txt",), ("sub/b.txt",))


def test_a_hand_edit_since_is_a_conflict_shown_as_a_diff_and_only_force_overwrites(bench: Bench) -> None:
    a = bench.ws / "a.txt"
    a.write_bytes(ORIGINAL)
    bench.turn("edit a", _edit("a.txt", "third line", "3rd line"), _write("new.txt", "x\n"))
    a.write_bytes(a.read_bytes() + b"a line typed by hand\n")
    hand = a.read_bytes()
    plan = plan_rewind(bench.session, bench.store, 1)
    [conflict] = plan.conflicts
    assert conflict.path == "a.txt" and conflict.conflict == "a.txt changed since the agent last wrote it"
    assert "+a line typed by hand" in conflict.diff and "(as the agent left it)" in conflict.diff
    with pytest.raises(RewindError) as refused:
        apply_rewind(bench.session, bench.store, plan)
    assert "\n" not in str(refused.value) and "--force" in str(refused.value)
    # Nothing was changed, nothing recorded: the turn count is the session's own.
    assert a.read_bytes() == hand and (bench.ws / "new.txt").exists() and bench.session.turns == 1
    entry = apply_rewind(bench.session, bench.store, plan, force=True).entry
    assert a.read_bytes() == ORIGINAL and not (bench.ws / "new.txt").exists()
    # The hand edit the force overwrote is not lost: rewinding the rewind brings it back.
    bench.rewind(entry)
    assert a.read_bytes() == hand and (bench.ws / "new.txt").read_text() == "x\n"


def test_a_file_changed_after_the_plan_was_shown_is_refused_even_with_force(bench: Bench) -> None:
    a = bench.ws / "a.txt"
    a.write_bytes(ORIGINAL)
    bench.turn("edit a", _edit("a.txt", "third line", "3rd line"))
    plan = plan_rewind(bench.session, bench.store, 1)
    assert not plan.conflicts
    a.write_bytes(b"changed while the question was on screen\n")
    with pytest.raises(RewindError):
        apply_rewind(bench.session, bench.store, plan, force=True)
    assert a.read_bytes() == b"changed while the question was on screen\n"


def test_a_hundred_edits_of_a_1mb_file_keep_few_blobs(bench: Bench) -> None:
    big = bench.ws / "big.txt"
    body = "".join(f"line {i:07d} of a big file\n" for i in range(40_000))
    assert len(body) > 1_000_000
    big.write_text(body)
    calls = [_edit("big.txt", f"line {i:07d} of", f"LINE {i:07d} of") for i in range(100)]
    bench.turn("touch a hundred lines", *calls)
    assert len(bench.blobs()) == 2, "the bytes before the turn and the bytes it left: nothing in between"
    bench.turn("one more", _edit("big.txt", "line 0000100 of", "LINE 0000100 of"))
    assert len(bench.blobs()) == 3, "turn 2's before is turn 1's after: one new blob"
    bench.rewind(1, conversation=False)
    assert big.read_text() == body


def test_a_rewind_is_itself_a_turn_and_rewinding_it_undoes_files_and_conversation(bench: Bench) -> None:
    a = bench.ws / "a.txt"
    a.write_bytes(ORIGINAL)
    bench.turn("first", _edit("a.txt", "first line", "FIRST"), answer="first answer")
    bench.turn("second", _write("a.txt", "second version\n"), _write("c.txt", "c\n"), answer="second answer")
    after_two = bench.session.messages[:]
    entry = bench.rewind(2)
    assert entry == 3 and bench.session.turns == 3
    assert a.read_bytes() == ORIGINAL.replace(b"first line", b"FIRST") and not (bench.ws / "c.txt").exists()
    assert "second" not in json.dumps([m.model_dump() for m in bench.session.messages])
    lines = list_turns(bench.session.path, bench.cp)
    assert [(t.turn, t.kind, t.in_conversation, t.rewound) for t in lines] == [
        (1, "turn", True, False),
        (2, "turn", False, True),
        (3, "rewind", False, False),
    ]
    assert lines[2].text == "[rewind to before turn 2: files and conversation]"
    assert (turn_prompt(bench.session.path, 2), turn_prompt(bench.session.path, 3)) == ("second", "")
    assert lines[2].files == ("a.txt", "c.txt")
    undo = bench.rewind(3)
    assert undo == 4
    assert a.read_bytes() == b"second version\n" and (bench.ws / "c.txt").read_text() == "c\n"
    assert bench.session.messages == after_two
    assert [t.in_conversation for t in list_turns(bench.session.path, bench.cp)][:2] == [True, True]


def test_a_conversation_rewind_is_what_every_replay_gives(bench: Bench) -> None:
    bench.turn("alpha question", answer="alpha answer")
    before = [m.model_copy(deep=True) for m in bench.session.messages]
    bench.turn("bravo question", answer="bravo answer")
    bench.rewind(2, files=False)
    assert bench.session.messages == before
    bench.session.close()
    for history in (True, False):
        with SessionStore(history=history).open(bench.session.id) as again:
            assert again.messages == before and again.turns == 3
            assert "bravo" not in json.dumps([m.model_dump() for m in again.messages])
    bench.session = bench.sessions.open(bench.session.id)


def test_a_rewind_across_a_compaction_takes_back_its_summary_and_replays_from_a_later_one(
    bench: Bench,
) -> None:
    bench.turn("alpha question", answer="alpha answer")
    before = [m.model_copy(deep=True) for m in bench.session.messages]
    bench.turn("bravo question", answer="bravo answer")
    bench.session.compact("they spoke of alpha and bravo", bench.session.messages[-2:], None, summarised=2)
    assert bench.session.summary
    bench.rewind(2, files=False)
    assert bench.session.messages == before and bench.session.summary is None
    bench.turn("charlie question", answer="charlie answer")
    bench.session.compact("alpha then charlie", bench.session.messages[-2:], None, summarised=2)
    kept = [m.model_copy(deep=True) for m in bench.session.messages]
    bench.session.close()
    for history in (True, False):
        with SessionStore(history=history).open(bench.session.id) as again:
            assert (again.messages, again.summary, again.turns) == (kept, "alpha then charlie", 4)
    bench.session = bench.sessions.open(bench.session.id)


def test_a_turn_that_ran_bash_is_flagged(bench: Bench) -> None:
    bench.turn(
        "use the shell", ("bash", {"command": "echo made by bash > shell.txt"}), _write("w.txt", "w\n")
    )
    [line] = list_turns(bench.session.path, bench.cp)
    assert line.bash and line.files == ("w.txt",)
    plan = plan_rewind(bench.session, bench.store, 1, conversation=False)
    assert plan.bash_turns == (1,)
    apply_rewind(bench.session, bench.store, plan)
    assert not (bench.ws / "w.txt").exists()
    assert (bench.ws / "shell.txt").read_text() == "made by bash\n", "what bash did is not rewound"


def test_the_turns_memory_jobs_are_named_and_never_rewound(bench: Bench) -> None:
    bench.session.begin_turn("remember this")
    bench.session.append(Message(role="user", content="remember this"))
    bench.session.append(Message(role="assistant", content="noted"))
    bench.session.end_turn("completed", job="20260101T000000Z-job1")
    plan = plan_rewind(bench.session, bench.store, 1)
    assert plan.jobs == ((1, "20260101T000000Z-job1"),)
    assert list_turns(bench.session.path, None)[0].job == "20260101T000000Z-job1"


def _age(cp: SessionCheckpoints, days: float) -> None:
    t = time.time() - days * 86400
    os.utime(cp.manifest_path, (t, t))


def test_the_bounds_prune_the_oldest_sessions_first(plain_ws: Path) -> None:
    store = CheckpointStore()
    made = []
    for i, days in enumerate((40, 3, 2, 1)):
        cp = store.session(f"s{i}", plain_ws)
        f = plain_ws / f"f{i}"
        f.write_bytes(os.urandom(100_000))
        cp.record_before(1, str(f))
        _age(cp, days)
        made.append(cp)
    assert store.size().sessions == 4
    one = store.size().bytes / 4
    # s0 is past the age bound; then the oldest go until the rest fit.
    assert store.prune(int(one * 2.5), 30) == ["s0", "s1"]
    assert sorted(os.listdir(store.root)) == ["s2", "s3"]
    assert store.prune(10**12, 1.5) == ["s2"]
    assert store.size().sessions == 1


def test_a_session_in_use_is_never_pruned(bench: Bench) -> None:
    (bench.ws / "a.txt").write_text("a\n")
    bench.turn("edit", _edit("a.txt", "a", "b"))
    _age(bench.cp, 400)
    assert bench.store.prune(0, 30) == []
    assert bench.store.size().sessions == 1


def test_a_hostile_manifest_is_one_line_and_nothing_is_lost(bench: Bench) -> None:
    (bench.ws / "a.txt").write_text("a\n")
    bench.turn("edit", _edit("a.txt", "a", "b"))
    hostile = (
        b'{"type":"meta","version":1,"session":"' + bench.session.id.encode() + b'"}\n'
        b'{"type":"before","turn":1,"path":"../../outside","sha":null,"mode":null}\n'
    )
    bench.cp.manifest_path.write_bytes(hostile)
    for read in (
        lambda: list_turns(bench.session.path, bench.cp),
        lambda: plan_rewind(bench.session, bench.store, 1),
    ):
        with pytest.raises(RewindError) as e:
            read()
        assert "\n" not in str(e.value) and "cannot be read" in str(e.value)
    bench.cp.manifest_path.write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError):
        bench.cp.manifest()
    # A new edit sets the bad manifest aside (every byte of it kept) and checkpoints again.
    bench.turn("edit again", _edit("a.txt", "b", "c"))
    aside = [p for p in bench.cp.dir.iterdir() if p.name.startswith("manifest.bad-")]
    assert [p.read_bytes() for p in aside] == [b"\x00garbage"]
    assert [t.files for t in list_turns(bench.session.path, bench.cp)] == [(), ("a.txt",)]


def test_a_manifest_line_cut_by_a_crash_is_left_out(bench: Bench) -> None:
    (bench.ws / "a.txt").write_text("a\n")
    bench.turn("edit", _edit("a.txt", "a", "b"))
    with open(bench.cp.manifest_path, "ab") as f:
        f.write(b'{"type":"bash","tu')
    assert bench.cp.manifest().entries[0].bash is False


def test_a_symlinked_folder_is_never_written_through(bench: Bench, tmp_path: Path) -> None:
    sub = bench.ws / "sub"
    sub.mkdir()
    (sub / "a.txt").write_text("a\n")
    bench.turn("edit", _edit("sub/a.txt", "a", "b"))
    outside = tmp_path / "outside"
    outside.mkdir()
    sub.rename(bench.ws / "moved")
    (bench.ws / "sub").symlink_to(outside)
    with pytest.raises(RewindError) as e:
        plan_rewind(bench.session, bench.store, 1)
    assert "symlink" in str(e.value)
    assert list(outside.iterdir()) == []

"""Print mode's ``--continue`` reads a session from its last compaction boundary on
(``SessionStore(history=False)``): the same conversation as a full replay, at a cost that does not
grow with the number of turns before that boundary (the long-session benchmark's turn 300)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from app.agent.conversation import session_log
from app.agent.conversation.blocks import Message, TextBlock
from app.agent.conversation.records import Record
from app.agent.conversation.session import Session
from app.agent.conversation.session_store import SessionStore

pytestmark = pytest.mark.plain_ws


def user(t: str) -> Message:
    return Message(role="user", content=[TextBlock(text=t)])


def asst(t: str) -> Message:
    return Message(role="assistant", content=[TextBlock(text=t)])


def turns(s: Session, first: int, n: int) -> None:
    for i in range(first, first + n):
        s.begin_turn(f"turn {i}")
        s.append(user(f"turn {i} " + "x" * 2000))
        s.append(asst(f"answer {i}"))
        s.end_turn("completed")
        s.record_usage(1000 + i, 2000 + i)


def long_session(ws: Path, segments: int) -> str:
    """``segments`` × (4 turns and a compaction, every other one mid-turn); then 2 turns."""
    s = SessionStore().create(ws)
    for k in range(segments):
        turns(s, 4 * k + 1, 4)
        if k % 2:
            s.begin_turn(f"turn {4 * k + 4}b")
            s.append(user("mid-turn question"))
            s.compact(
                f"summary {k}",
                [user("kept"), asst("kept answer"), user("mid-turn question")],
                2,
                summarised=6,
                requests=1,
            )
            s.append(asst("mid-turn answer"))
            s.end_turn("completed")
        else:
            s.compact(f"summary {k}", [user("kept"), asst("kept answer")], None, summarised=6, requests=1)
    turns(s, 10_000, 2)
    sid = s.id
    s.close()
    return sid


def state(s: Session) -> tuple[Any, ...]:
    return (s.messages, s.turns, s.title, s.compactions, s.anchor, s.summary, s._lines, s.turn_start)


def restored(sid: str, history: bool) -> tuple[Any, ...]:
    s = SessionStore(history=history).open(sid)
    s.close()
    return state(s)


def test_without_history_a_session_restores_to_the_same_conversation(isolated_home: Path, ws: Path) -> None:
    sid = long_session(ws, 5)
    full = SessionStore().open(sid)
    want = state(full)
    assert full.earlier and full.compactions == 5
    full.close()
    tail = SessionStore(history=False).open(sid)
    assert state(tail) == want and tail.earlier == [] and not tail.warnings
    # It goes on as the full one would: a turn and a compaction more, then both read it alike.
    tail.begin_turn("after")
    tail.append(user("after"))
    tail.compact("summary after", [user("after")], 0, summarised=3)
    tail.append(asst("answer after"))
    tail.end_turn("completed")
    tail.close()
    assert restored(sid, True) == restored(sid, False) and restored(sid, True)[1] == 5 * 4 + 2 + 2 + 1


def test_a_torn_last_line_after_the_boundary_is_cut_as_before(isolated_home: Path, ws: Path) -> None:
    sid = long_session(ws, 3)
    path = SessionStore().dir / f"{sid}.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"type":"message","message":{"role":"us')
    tail = SessionStore(history=False).open(sid)
    assert any("incomplete last line" in w for w in tail.warnings)
    tail.close()
    assert path.read_bytes().endswith(b"\n")
    assert restored(sid, True) == restored(sid, False)


def cost(sid: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(records replayed, bytes read) of one restore without history."""
    counts = [0, 0]
    record, pread = session_log.Replayed.record, os.pread

    def counted_record(self: session_log.Replayed, lineno: int, rec: Record) -> None:
        counts[0] += 1
        record(self, lineno, rec)

    def counted_pread(fd: int, n: int, offset: int) -> bytes:
        data = pread(fd, n, offset)
        counts[1] += len(data)
        return data

    with monkeypatch.context() as m:
        m.setattr(session_log.Replayed, "record", counted_record)
        m.setattr(os, "pread", counted_pread)
        m.setattr(session_log, "READ_BACK", 4096)
        SessionStore(history=False).open(sid).close()
    return counts[0], counts[1]


def test_restoring_without_history_costs_the_same_after_10_or_60_compactions(
    isolated_home: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    short, long = long_session(ws, 10), long_session(ws, 60)
    size = {sid: (SessionStore().dir / f"{sid}.jsonl").stat().st_size for sid in (short, long)}
    assert size[long] > 5 * size[short]
    (records_short, read_short), (records_long, read_long) = cost(short, monkeypatch), cost(long, monkeypatch)
    assert records_long == records_short  # the meta, the boundary and what follows it
    # The head, the part from the boundary on (a 4 KiB step back at most), and nothing else.
    assert read_long <= read_short + 4096 < size[short]

"""What /resume offers (sessions with a prompt) and what a restored compacted session keeps to
show: the messages before its compaction boundaries, apart from the conversation the model gets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.agent.conversation import session_log as session_module
from app.agent.conversation.blocks import Message, TextBlock
from app.agent.conversation.session import Session
from app.agent.conversation.session_log import CompactionMark
from app.agent.conversation.session_store import SessionStore

# `ws` here is an empty folder, not the shared git work tree.
pytestmark = pytest.mark.plain_ws


@pytest.fixture
def store(isolated_home: Path) -> SessionStore:
    return SessionStore()


def user(t: str) -> Message:
    return Message(role="user", content=[TextBlock(text=t)])


def asst(t: str) -> Message:
    return Message(role="assistant", content=[TextBlock(text=t)])


def turn(s: Session, n: int) -> None:
    s.begin_turn(f"question {n}")
    s.append(user(f"question {n}"))
    s.append(asst(f"answer {n}"))
    s.end_turn("completed")


def words(items: list[Message | CompactionMark]) -> list[str]:
    """Each message's text, and "|" for a compaction marker."""
    out = []
    for m in items:
        if isinstance(m, CompactionMark):
            out.append("|")
        else:
            out.append(" ".join(b.text for b in m.content if isinstance(b, TextBlock)))
    return out


def test_a_session_opened_and_closed_has_no_prompt(store: SessionStore, ws: Path) -> None:
    store.create(ws).close()
    with store.create(ws) as prompted:
        turn(prompted, 1)
    with store.create(ws) as failed:  # a prompt whose turn failed still counts: the words are in the log
        failed.begin_turn("this one failed")
        failed.end_turn("error", message="boom")
    listed = {i.id: i.has_prompt for i in store.list(ws)}
    assert listed[prompted.id] and listed[failed.id]
    assert sorted(listed.values()) == [False, True, True]


def test_a_restored_compacted_session_keeps_the_turns_before_each_boundary_to_show(
    store: SessionStore, ws: Path
) -> None:
    with store.create(ws) as s:
        for n in (1, 2, 3):
            turn(s, n)
        s.compact("summary of 1-2", s.messages[4:], None, summarised=4)
        turn(s, 4)
        s.compact("summary of 1-3", s.messages[2:], None, summarised=2)
        turn(s, 5)
        sid, model_view = s.id, words(s.messages)
    with store.open(sid) as again:
        # The model's view is the compacted conversation, exactly as before.
        assert words(again.messages) == model_view == ["question 4", "answer 4", "question 5", "answer 5"]
        assert words(again.transcript()) == [
            "question 1",
            "answer 1",
            "question 2",
            "answer 2",
            "|",
            "question 3",
            "answer 3",
            "|",
            "question 4",
            "answer 4",
            "question 5",
            "answer 5",
        ]
        assert [m.summarised for m in again.earlier if isinstance(m, CompactionMark)] == [4, 2]
        assert again.earlier_left_out == 0


def test_a_session_without_compaction_shows_its_conversation_only(store: SessionStore, ws: Path) -> None:
    with store.create(ws) as s:
        turn(s, 1)
    with store.open(s.id) as again:
        assert again.earlier == [] and again.transcript() == again.messages


def test_what_is_kept_before_the_boundaries_is_bounded_and_the_rest_counted(
    store: SessionStore, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_module, "EARLIER_KEPT", 3)
    with store.create(ws) as s:
        for n in (1, 2, 3):
            turn(s, n)
        s.compact("summary", s.messages[4:], None, summarised=4)
    with store.open(s.id) as again:
        assert words(again.earlier) == ["question 2", "answer 2", "|"]
        assert again.earlier_left_out == 2


def test_continue_skips_a_newer_session_that_was_opened_and_closed(store: SessionStore, ws: Path) -> None:
    with store.create(ws) as prompted:
        turn(prompted, 1)
    empty = store.create(ws)
    empty.close()
    # The empty one is the newer, whatever the clock's resolution.
    os.utime(store.dir / f"{prompted.id}.jsonl", ns=(1_000_000_000, 1_000_000_000))
    latest = store.latest(ws)
    assert latest is not None and latest.id == prompted.id


def test_continue_with_only_empty_sessions_finds_none(store: SessionStore, ws: Path) -> None:
    store.create(ws).close()
    assert store.latest(ws) is None

"""app/tui/text_batch.py: a run's text deltas reach the App merged, in order."""

from __future__ import annotations

import asyncio

from app.agent.model.provider import TextDelta, ToolUseStart
from app.tui.text_batch import TextBatch


async def test_deltas_of_one_loop_turn_are_posted_once_with_their_text_joined() -> None:
    posted: list[object] = []
    emit = TextBatch(posted.append)
    for word in ("a", "b", "c"):
        emit(TextDelta(word))
    assert posted == []  # not yet: the loop has not turned
    await asyncio.sleep(0)
    assert posted == [TextDelta("abc")]
    emit(TextDelta("d"))
    await asyncio.sleep(0)
    assert posted == [TextDelta("abc"), TextDelta("d")]


async def test_another_event_posts_the_pending_text_before_itself() -> None:
    posted: list[object] = []
    emit = TextBatch(posted.append)
    emit(TextDelta("before "))
    emit(ToolUseStart("c1", "bash"))
    emit(TextDelta("after"))
    emit.flush()
    assert posted == [TextDelta("before "), ToolUseStart("c1", "bash"), TextDelta("after")]
    await asyncio.sleep(0)  # the scheduled flushes find nothing left
    assert len(posted) == 3


async def test_a_sub_agents_words_are_not_merged_with_the_answers() -> None:
    posted: list[object] = []
    emit = TextBatch(posted.append)
    emit(TextDelta("top ", depth=0))
    emit(TextDelta("sub", depth=1))
    emit(TextDelta(" top", depth=0))
    await asyncio.sleep(0)
    assert posted == [TextDelta("top ", depth=0), TextDelta("sub", depth=1), TextDelta(" top", depth=0)]

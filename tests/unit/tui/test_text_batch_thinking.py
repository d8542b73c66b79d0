"""app/tui/text_batch.py with thinking: thinking deltas are merged like the answer's, never with
it, in order; a redacted block is posted on its own."""

from __future__ import annotations

import asyncio

from app.agent.model.provider import TextDelta, ThinkingDelta
from app.tui.text_batch import TextBatch


async def test_thinking_is_merged_apart_from_the_answer_and_a_redacted_block_alone() -> None:
    posted: list[object] = []
    emit = TextBatch(posted.append)
    for chunk in ("", "Let me ", "think."):
        emit(ThinkingDelta(chunk))
    emit(TextDelta("The "))
    emit(TextDelta("answer."))
    emit(ThinkingDelta("", redacted=True))
    emit(ThinkingDelta("more"))
    await asyncio.sleep(0)
    assert posted == [
        ThinkingDelta("Let me think."),
        TextDelta("The answer."),
        ThinkingDelta("", redacted=True),
        ThinkingDelta("more"),
    ]

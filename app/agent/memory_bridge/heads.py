"""What memory adds at the head of a Run's user message: the ``<memory-update>`` block (index
changes since the model last saw it) and the ``<memory-recall>`` block.

Before each Run the user's message (``@``-attached file names are in its text) is matched
against the cards not in the index the model has; up to five are named at the head of the
Run's user message in a ``<memory-recall>`` block. A card is named once per conversation unless
it changed (its sha): ``recalled`` is the Runner's record of what it named.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import NamedTuple

from app.agent.conversation.blocks import Message, TextBlock
from app.agent.memory_bridge.ports import IndexSource, RecallSource
from memory.store.index import INDEX_LINE_RE, RECALL_OPEN, index_diff, index_keys, recall_block

__all__ = ["EARLIER", "MemoryHeads", "memory_heads", "recall_query", "recalled_in"]

# A card named by a recall block of a resumed conversation: its sha is unknown, so it is taken
# as unchanged (the conversation still holds its line).
EARLIER = "*"

log = logging.getLogger(__name__)


# An @-attached file as the app puts it in the message (app/tui/chat/filecomplete.py ``attach``).
_ATTACHED_RE = re.compile(r'<attached-file path="([^"]*)"[^>]*>.*?(?:</attached-file>|\Z)', re.DOTALL)


def recall_query(user_text: str) -> str:
    """What recall matches: the user's own words and the names of the files they attached, not
    the files' contents (a 100 KB attachment would make every card look relevant)."""
    return _ATTACHED_RE.sub(lambda m: f" {m.group(1)} ", user_text)


def recalled_in(messages: list[Message]) -> dict[str, str]:
    """The cards the ``<memory-recall>`` blocks of a conversation named (a resumed session):
    each under both levels, since a block's line does not say which."""
    out: dict[str, str] = {}
    for message in messages:
        for block in message.content if message.role == "user" else ():
            if isinstance(block, TextBlock) and block.text.startswith(RECALL_OPEN):
                for line in block.text.split("\n"):
                    m = INDEX_LINE_RE.match(line)
                    if m is not None:
                        out[f"project/{m.group('filename')}"] = out[f"user/{m.group('filename')}"] = EARLIER
    return out


class MemoryHeads(NamedTuple):
    """What memory puts at the head of a Run's user message, and what the model then has."""

    update: str  # the ``<memory-update>`` block, "" when nothing changed
    shown_index: str  # the index the model has after it
    recall: str  # the ``<memory-recall>`` block, "" for none
    recalled: list[str]  # the cards it names (``level/filename``)


async def memory_heads(
    memory: IndexSource | None,
    source: RecallSource | None,
    shown_index: str,
    user_text: str,
    recalled: dict[str, str],
) -> MemoryHeads:
    """The index update, then recall against the index it leaves, in one trip off the event loop:
    each trip waits for the frame the screen is drawing when it ends (the answer's request goes
    out that much later). ``recalled`` gets the cards named. Never fails the Run."""
    cards = await asyncio.to_thread(_heads, memory, source, shown_index, user_text, dict(recalled))
    for key, sha, _ in cards.found:
        recalled[key] = sha
    return MemoryHeads(
        cards.update,
        cards.shown_index,
        recall_block([line for _, _, line in cards.found]),
        [key for key, _, _ in cards.found],
    )


class _Found(NamedTuple):
    update: str
    shown_index: str
    found: list[tuple[str, str, str]]


def _heads(
    memory: IndexSource | None,
    source: RecallSource | None,
    shown_index: str,
    user_text: str,
    recalled: dict[str, str],
) -> _Found:
    update, current = "", shown_index
    if memory is not None:
        try:
            # The cards the model has are kept first when the index is cut: one session's index
            # stays stable while reads reorder the ranks.
            current = memory.merged_index(keep=index_keys(shown_index))
            update = index_diff(shown_index, current)
        except OSError as e:
            log.warning("memory index unreadable: %s", e)
    if source is None:
        return _Found(update, current, [])
    try:
        shown = set(index_keys(current)) | {k for k, sha in recalled.items() if sha == EARLIER}
        hits = source.recall(recall_query(user_text), shown, recalled)
        return _Found(update, current, [(c.key, c.sha, c.line) for c in hits])
    except Exception as e:  # search is a help, not a condition
        log.warning("memory recall failed: %s", e)
        return _Found(update, current, [])

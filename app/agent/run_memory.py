"""What memory adds at the head of a Run's user message: the ``<memory-update>`` block (index
changes since the model last saw it, DESIGN §4) and the ``<memory-recall>`` block (§15).

Before each Run the user's message (``@``-attached file names are in its text) is matched
against the cards not in the index the model has; up to five are named at the head of the
Run's user message in a ``<memory-recall>`` block. A card is named once per conversation unless
it changed (its sha): ``recalled`` is the Runner's record of what it named.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from typing import Any

from app.agent.ports import IndexSource, RecallSource
from memory.store.index import INDEX_LINE_RE, RECALL_OPEN, index_diff, index_keys, recall_block

__all__ = ["EARLIER", "index_update", "recall_for", "recall_query", "recalled_in"]

# A card named by a recall block of a resumed conversation: its sha is unknown, so it is taken
# as unchanged (the conversation still holds its line).
EARLIER = "*"

log = logging.getLogger(__name__)


# An @-attached file as the app puts it in the message (app/tui/filecomplete.py ``attach``).
_ATTACHED_RE = re.compile(r'<attached-file path="([^"]*)"[^>]*>.*?(?:</attached-file>|\Z)', re.DOTALL)


def recall_query(user_text: str) -> str:
    """What recall matches: the user's own words and the names of the files they attached, not
    the files' contents (a 100 KB attachment would make every card look relevant)."""
    return _ATTACHED_RE.sub(lambda m: f" {m.group(1)} ", user_text)


def recalled_in(messages: list[dict[str, Any]]) -> dict[str, str]:
    """The cards the ``<memory-recall>`` blocks of a conversation named (a resumed session):
    each under both levels, since a block's line does not say which."""
    out: dict[str, str] = {}
    for message in messages:
        content = message.get("content") if message.get("role") == "user" else None
        for block in content if isinstance(content, list) else ():
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(text, str) and text.startswith(RECALL_OPEN):
                for line in text.split("\n"):
                    m = INDEX_LINE_RE.match(line)
                    if m is not None:
                        out[f"project/{m.group('filename')}"] = out[f"user/{m.group('filename')}"] = EARLIER
    return out


async def recall_for(
    source: RecallSource, user_text: str, shown_index: str, recalled: dict[str, str]
) -> tuple[str, list[str]]:
    """The block for ``user_text`` ("" for none) and the cards it names (``level/filename``);
    ``recalled`` gets them. Off the event loop; never fails the Run (search is a help, not a
    condition)."""

    def find() -> list[tuple[str, str, str]]:
        shown = set(index_keys(shown_index)) | {k for k, sha in recalled.items() if sha == EARLIER}
        return [(c.key, c.sha, c.line) for c in source.recall(recall_query(user_text), shown, dict(recalled))]

    try:
        cards = await asyncio.to_thread(find)
    except Exception as e:
        log.warning("memory recall failed: %s", e)
        return "", []
    for key, sha, _ in cards:
        recalled[key] = sha
    return recall_block([line for _, _, line in cards]), [key for key, _, _ in cards]


async def index_update(memory: IndexSource, shown_index: str) -> tuple[str, str]:
    """(the ``<memory-update>`` block, "" when nothing changed; the index the model then has).
    The cards ``shown_index`` shows are kept first when the index is cut: one session's index
    stays stable while reads reorder the ranks."""
    keep = index_keys(shown_index)
    try:
        current = await asyncio.to_thread(functools.partial(memory.merged_index, keep=keep))
    except OSError as e:
        log.warning("memory index unreadable: %s", e)
        return "", shown_index
    return index_diff(shown_index, current), current

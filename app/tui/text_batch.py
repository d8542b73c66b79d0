"""A run's text deltas merged before they reach the chat screen's message queue.

The provider yields a delta per streamed token, 2,000 a second at full speed; each posted as its
own message costs a dispatch through Textual's queue and a handler call (about a tenth of a
millisecond: a fifth of a core at that speed), while the answer writes its text a few times a
second anyway. Deltas of one kind (answer or thinking) and one depth that arrive in the same turn
of the event loop go as one; any other event posts the merged text before itself, so the order
is kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from app.agent.model.provider import TextDelta, ThinkingDelta

__all__ = ["TextBatch"]


class TextBatch:
    """``emit`` for a run: call it with every event; ``flush`` at the run's end."""

    def __init__(self, post: Callable[[Any], object]) -> None:
        self._post = post
        self._texts: list[str] = []
        self._kind: type[TextDelta] | type[ThinkingDelta] = TextDelta
        self._depth = 0
        self._loop = asyncio.get_running_loop()

    def __call__(self, ev: Any) -> None:
        if isinstance(ev, TextDelta) or (isinstance(ev, ThinkingDelta) and not ev.redacted):
            if self._texts and (ev.depth != self._depth or type(ev) is not self._kind):
                self.flush()
            if not self._texts:
                self._depth, self._kind = ev.depth, type(ev)
                self._loop.call_soon(self.flush)
            self._texts.append(ev.text)
            return
        self.flush()
        self._post(ev)

    def flush(self) -> None:
        if self._texts:
            text = "".join(self._texts)
            self._texts.clear()
            self._post(self._kind(text, depth=self._depth))

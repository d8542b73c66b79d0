"""Windows that ask a person to decide (allow a command, trust a store, delete, approve, discard)
take an answer only once the person has seen them.

A window can open under someone's fingers: a permission question comes up at the end of a
streamed answer while the next prompt is being typed, the trust question 80 ms after the prompt
appeared. A key that arrives while such a window opens, or before the typing pauses, was meant
for something else, so it is never an answer: a key is an answer only when the window has been on
the screen for ``SETTLE_S`` and no key came for ``QUIET_S`` before it. Keys that are not answers
go back to the prompt they were typed for (printable text and Backspace, through the App's
:class:`TypedAheadSink`); the rest are dropped. Either way the window says so in one line, so a
person whose ``y`` did nothing knows why.

Priority bindings (Ctrl+Q, Ctrl+C) are the App's and never reach a window, and a mouse click is
always deliberate: both work at once.
"""

from __future__ import annotations

import time
from typing import ClassVar, Protocol, runtime_checkable

from textual import events
from textual.content import Content
from textual.css.query import NoMatches
from textual.widgets import Static

__all__ = [
    "QUIET_S",
    "SETTLE_S",
    "DecisionGate",
    "TypedAheadSink",
    "clock",
    "typed_ahead_line",
    "typed_ahead_note",
]

SETTLE_S = 0.3  # a window is on the screen this long before a key can answer it
QUIET_S = 0.5  # and no key came this long before the answering one


def clock() -> float:
    """The time keys are measured by (the App's ``last_key_at`` too)."""
    return time.monotonic()


@runtime_checkable
class TypedAheadSink(Protocol):
    """What the App offers a deciding window: when the last key arrived anywhere, and a way to
    hand back text that was typed for the prompt."""

    last_key_at: float

    def take_typed_ahead(self, text: str, backspaces: int) -> bool:
        """Put ``text`` into the prompt after deleting ``backspaces`` characters before its
        cursor; False when there is no prompt to take it (the keys are then dropped)."""
        ...


def typed_ahead_note(forwarded: int, dropped: int) -> str:
    """The window's line about keys it did not take as answers."""
    parts = []
    if forwarded:
        parts.append(f"{forwarded} key{'s' if forwarded != 1 else ''} went back to the prompt")
    if dropped:
        parts.append(f"{dropped} key{'s' if dropped != 1 else ''} dropped")
    return (
        "Keys typed while this window opened are not answers (" + ", ".join(parts) + "). "
        "Answer once you have read it."
    )


class DecisionGate:
    """Mixed into a Screen that decides. ``DECISION_KEYS``: the keys that answer it (None: every
    key); other keys (scrolling, moving the selection) work at once. A subclass that shows its
    content later (a list still being read) calls :meth:`restart_gate` when it is drawn: the
    clock starts again from there.

    The screen shows the line about typed-ahead keys in a ``Static`` with the id
    ``typed-ahead`` if it has one, as a notification otherwise.
    """

    DECISION_KEYS: ClassVar[frozenset[str] | None] = None
    SETTLE_S: ClassVar[float] = SETTLE_S
    QUIET_S: ClassVar[float] = QUIET_S

    _gate_shown_at: float | None = None  # when the window (or its content) was drawn
    _gate_last_key: float = float("-inf")
    _gate_forwarded: int = 0
    _gate_dropped: int = 0

    def _gate_sink(self) -> TypedAheadSink | None:
        app = getattr(self, "app", None)
        return app if isinstance(app, TypedAheadSink) else None

    def _on_mount(self, event: events.Mount) -> None:
        sink = self._gate_sink()
        if sink is not None:
            self._gate_last_key = max(self._gate_last_key, sink.last_key_at)
        self.restart_gate()

    def restart_gate(self) -> None:
        """The window's content is (being) drawn now: answers count from after its next frame."""
        self._gate_shown_at = None
        self.call_after_refresh(self._gate_drawn)  # type: ignore[attr-defined]

    def _gate_drawn(self) -> None:
        self._gate_shown_at = clock()

    def gate_open(self, now: float | None = None) -> bool:
        """Would a key arriving now (after the last one) be taken as an answer?"""
        if self.SETTLE_S <= 0 and self.QUIET_S <= 0:
            return True  # no delays: the gate is off
        now = clock() if now is None else now
        shown = self._gate_shown_at
        return (
            shown is not None and now - shown >= self.SETTLE_S and now - self._gate_last_key >= self.QUIET_S
        )

    async def _on_key(self, event: events.Key) -> None:
        now = clock()
        answers = self.DECISION_KEYS is None or event.key in self.DECISION_KEYS
        is_open = self.gate_open(now)
        if answers or event.is_printable:  # moving the selection is not typing
            self._gate_last_key = now
        if answers and not is_open:
            # Typed for something else: neither the screen's key methods nor the App's bindings.
            event.stop()
            event.prevent_default()
            self._typed_ahead(event)
            return
        # Not stopped: the screen's own handlers and the bindings take it as usual.

    def _typed_ahead(self, event: events.Key) -> None:
        sink = self._gate_sink()
        if event.key == "backspace":
            text, back = "", 1
        elif event.is_printable and event.character:
            text, back = event.character, 0
        else:
            text, back = None, 0
        # Handed back key by key: the prompt shows what was typed as it is typed.
        if text is not None and sink is not None and sink.take_typed_ahead(text, back):
            self._gate_forwarded += 1
        else:
            self._gate_dropped += 1
        self._gate_say()

    def _gate_say(self) -> None:
        line = typed_ahead_note(self._gate_forwarded, self._gate_dropped)
        try:
            target = self.query_one("#typed-ahead", Static)  # type: ignore[attr-defined]
        except NoMatches:
            if self._gate_forwarded + self._gate_dropped == 1:  # once: not a toast per key
                self.notify(line, timeout=4)  # type: ignore[attr-defined]
            return
        target.update(Content.styled(line, "italic $text-warning"))
        target.display = True


def typed_ahead_line() -> Static:
    """The (hidden until needed) line where a deciding window says it did not take keys as answers."""
    line = Static("", id="typed-ahead")
    line.display = False
    return line

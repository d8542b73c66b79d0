"""The model's answer in the chat: Markdown, streamed behind a short coalescing timer.

A token burst becomes one Markdown append every ``FLUSH_INTERVAL`` seconds instead of one per
token, so typing stays responsive while a long answer arrives (re-rendering per token is
O(n²)). Model text is hostile (it can carry terminal escape sequences): it is stripped over
the stream before anything is written.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from typing import ClassVar, NamedTuple

from textual.await_complete import AwaitComplete
from textual.geometry import Region
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownBlock

from memory.text.terminal import TerminalStreamStripper, strip_terminal
from widgets.chat.answer_part import AnswerPart

__all__ = ["AnswerBlock", "AnswerSpacer"]


class AnswerSpacer(Widget):
    """Stands in for an answer's blocks hidden far above the view: their height, nothing drawn."""

    DEFAULT_CSS = """
    AnswerSpacer {
        height: 0;
        margin: 0;
        padding: 0;
    }
    """



class _Writer:
    """Writes the answer's text to its Markdown widgets in order, one append at a time; what
    arrives for the same widget while an append runs is merged into the next one."""

    def __init__(self, block: AnswerBlock) -> None:
        self._block = block
        self._queue: deque[tuple[Markdown, str] | AnswerPart] = deque()
        self._task: asyncio.Task[None] | None = None

    def append(self, target: Markdown, text: str) -> None:
        queue = self._queue
        last = queue[-1] if queue else None
        if isinstance(last, tuple) and last[0] is target:
            queue[-1] = (target, last[1] + text)
        else:
            queue.append((target, text))
        self._run_soon()

    def mount(self, part: AnswerPart) -> None:
        self._queue.append(part)
        self._run_soon()

    def _run_soon(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        block = self._block
        while self._queue and not block._closed:
            item = self._queue.popleft()
            try:
                if isinstance(item, AnswerPart):
                    await block.mount(item)
                else:
                    # One frame for the whole write: without the batch, the blocks it mounts
                    # are laid out (the whole screen) once per step of their mounting.
                    with block.app.batch_update():
                        await Markdown.append(item[0], item[1])
                        block._mark_last()
            except Exception:
                if not block._closed:
                    raise
                return  # removed mid-write (pruned or cleared): the rest is dropped

    @property
    def idle(self) -> bool:
        return not self._queue and (self._task is None or self._task.done())

    async def drain(self) -> None:
        """Until everything written so far is appended and mounted."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    def close(self) -> None:
        self._queue.clear()
        if self._task is not None:
            self._task.cancel()


# A place a new part may start: after a blank line, at a line that starts a paragraph, a
# list or a rule (not a heading, fence, quote, table, HTML, indented code or setext underline).
_PART_START_RE = re.compile(r"\n[ \t]*\n(?=[^\s#`~>|<=])")
_FENCE_RE = re.compile(r"^ {0,3}(?:```|~~~)", re.MULTILINE)
# A second line that turns the first into a heading (setext) or a table header.
_NOT_PARAGRAPH_RE = re.compile(r" {0,3}(?:=+|-+)[ \t]*$|.*\|.*-{3}|[ \t]*\|?[ \t]*:?-+:?[ \t]*\|")


class AnswerBlock(Markdown):
    """The model's answer as Markdown (fenced code is highlighted by Markdown's fences).

    ``append`` never waits on rendering: fragments are buffered and written to the Markdown
    widgets at most every ``FLUSH_INTERVAL`` seconds, and what arrives while an append runs is
    merged into the next one. ``finish`` flushes and, once the block is mounted, waits until
    everything received is rendered; before that it returns at once and the whole text is
    rendered in one update on mount (a resumed history of many blocks does not wait a mount
    per block).

    A long streamed answer is written in parts of about ``PART_CHARS`` characters: the first
    into this widget, the later ones into ``AnswerPart`` children (see there why). And Textual
    lays out every displayed widget of the screen on each change, while a long answer is
    hundreds of them: ``virtualize`` (driven by the chat pane) hides the children far above
    the view (``display: none``) behind one ``AnswerSpacer`` of their height, and shows them
    again when the view comes near or the width changes. Only a prefix of the children, never
    the last one (the one still growing), is ever hidden.
    """

    # Each write lays the screen out again (a few milliseconds to tens of them): a few writes a
    # second read as fluid and leave the loop free for the keyboard.
    FLUSH_INTERVAL: ClassVar[float] = 0.12
    TYPING_FLUSH_INTERVAL: ClassVar[float] = 0.2  # ... and while the person types (see ``typing``)
    TYPING_S: ClassVar[float] = 0.3  # a key this recent: the person is typing
    PART_CHARS: ClassVar[int] = 1_500

    DEFAULT_CSS = """
    AnswerBlock {
        margin: 1 0 0 0;
        padding: 0 1;
        &.-nested {
            margin: 0 0 0 4;
            color: $text-muted;
        }
        /* The last block's bottom margin would add a blank row before the next chat block. A
           class the block moves along, not `MarkdownBlock:last-child`: an order pseudo-class makes
           every mount restyle all of the answer's blocks (quadratic over a long stream). */
        & > .-answer-last, & > AnswerPart > .-answer-last {
            margin-bottom: 0;
        }
    }
    """

    def __init__(self, depth: int = 0) -> None:
        super().__init__(None, classes="-nested" if depth else None)
        self.depth = depth
        self._received: list[str] = []
        # Stripped over the stream, not per fragment: a sequence cut between two fragments
        # would leave its tail (``31m``, ``]52;c;…``) on screen. ``_pending`` is stripped text.
        self._stripper = TerminalStreamStripper()
        self._pending: list[str] = []
        self._writer = _Writer(self)
        self._target: Markdown = self  # where the stream's text goes now
        self._target_text = ""  # what was written to it (where a new part may start)
        self._flush_timer: Timer | None = None
        self._flush_after_frame = False
        self._typed_at = float("-inf")  # the last key the App reported (``typing``)
        self._last_write = float("-inf")
        # Markdown's own mount handler replaces the document with "" (its initial update):
        # nothing may be written before that has run.
        self._ready = False
        self._finished = False
        self._closed = False
        self._last_block: Widget | None = None
        self._spacer: AnswerSpacer | None = None
        self._hidden: list[_Hidden] = []  # top first
        self._hidden_width = 0

    @property
    def text(self) -> str:
        """All fragments received so far, as received (the display shows them sanitized)."""
        return "".join(self._received)

    @property
    def shown_text(self) -> str:
        """The Markdown source written so far (this widget's and its parts'), as shown."""
        parts = [self.source, *(c.source for c in self.children if isinstance(c, AnswerPart))]
        return "".join(parts)

    @property
    def finished(self) -> bool:
        return self._finished

    def on_mount(self) -> None:
        # Runs before Markdown._on_mount in the same dispatch; call_later runs after it.
        self.call_later(self._become_ready)

    async def _become_ready(self) -> None:
        self._ready = True
        if self._closed:
            return
        if self._finished:
            # Finished before it was shown (a short answer, or a resumed session): one update.
            await self.update(strip_terminal(self.text))
            self._mark_last()
        else:
            self._schedule_flush()

    def append(self, fragment: str) -> AwaitComplete:
        """Add a fragment of the answer. Done when it returns (rendering is coalesced): the
        result, Markdown's awaitable, is already complete."""
        if fragment and not self._finished and not self._closed:
            self._received.append(fragment)
            if shown := self._stripper.feed(fragment):
                self._pending.append(shown)
                self._schedule_flush()
        return AwaitComplete.nothing()

    def _schedule_flush(self) -> None:
        if (self._ready and self._pending and self._flush_timer is None and not self._flush_after_frame
                and not self._closed):
            delay = self.FLUSH_INTERVAL
            now = time.monotonic()
            if now - self._typed_at < self.TYPING_S:
                # The person is typing: the next write goes right after a keystroke's frame
                # (``typing``); this timer only writes if the typing stops.
                delay = max(self._last_write + self.TYPING_FLUSH_INTERVAL + self.TYPING_S - now, self.FLUSH_INTERVAL)
            self._flush_timer = self.set_timer(delay, self._flush)

    def flush(self) -> None:
        """The response's text is complete: write what is buffered now, without waiting for the
        timer (nor for the write). An escape sequence still open at this point ends here."""
        self._end_stream()
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        if self._ready:
            self._flush()

    def _end_stream(self) -> None:
        if tail := self._stripper.flush():
            self._pending.append(tail)

    def typing(self) -> None:
        """A key was pressed. A write lays the screen out for a few frames (tens of milliseconds):
        while the person types, the answer is written at most every ``TYPING_FLUSH_INTERVAL``
        and only right after a keystroke's frame, so that the write is done before the next key
        and no keystroke waits behind one."""
        now = time.monotonic()
        self._typed_at = now
        if self._flush_after_frame:
            return
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        if not self._pending:
            return
        if now - self._last_write >= self.TYPING_FLUSH_INTERVAL:
            self._flush_after_frame = True
            self.call_after_refresh(self._flush_now)
        else:
            self._schedule_flush()  # a fallback, should the typing stop

    def _flush_now(self) -> None:
        self._flush_after_frame = False
        if self._flush_timer is None:
            self._flush()

    def _flush(self) -> None:
        self._flush_timer = None
        if not self._pending or self._closed:
            return
        self._last_write = time.monotonic()
        chunk = "".join(self._pending)
        self._pending.clear()
        cut = self._part_start(chunk)
        if cut is not None:
            if cut:
                self._writer.append(self._target, chunk[:cut])
            part = AnswerPart()
            self._writer.mount(part)
            self._target, self._target_text, chunk = part, "", chunk[cut:]
        self._writer.append(self._target, chunk)
        self._target_text += chunk

    def _part_start(self, chunk: str) -> int | None:
        """Where in ``chunk`` a new part starts (None: the current one goes on)."""
        written = self._target_text
        if len(written) + len(chunk) < self.PART_CHARS:
            return None
        text = written + chunk
        for m in _PART_START_RE.finditer(text, max(len(written) - 2, 0)):
            at = m.end()
            rest = text[at:].split("\n", 2)
            if len(rest) < 3:
                return None  # the next two lines decide what the block is: wait for them
            if _NOT_PARAGRAPH_RE.match(rest[1]):
                continue
            if len(_FENCE_RE.findall(text, 0, at)) % 2:
                continue  # inside a code fence
            return at - len(written)
        return None

    async def finish(self) -> None:
        """The answer is complete: show what is still buffered and wait until it is rendered."""
        if self._finished or self._closed:
            self._finished = True
            return
        self._finished = True
        self._end_stream()
        if not self._ready:
            return  # _become_ready renders the whole text once the widget is mounted
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        self._flush()
        await self._writer.drain()

    async def drawn(self) -> None:
        """Write every fragment received so far now (no coalescing wait) and return after the
        frame that shows it. The stream goes on: an escape sequence still open stays held (call
        ``flush`` first when the response is complete). Returns at once when the block is removed
        or not ready yet (mounted a moment ago: its first write follows its mount by itself)."""
        if self._closed or not self._ready:
            return
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        self._flush()
        await self._writer.drain()
        if not self.is_attached:
            return  # removed while it wrote
        shown: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def frame_done() -> None:
            if not shown.done():
                shown.set_result(None)

        # The App's queue, not this widget's: a block removed meanwhile would drop the callback.
        if self.app.call_after_refresh(frame_done):
            await shown

    async def on_unmount(self) -> None:
        # Pruned or cleared (maybe mid-stream): later appends are dropped, the writer ends.
        self._closed = True
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        self._pending.clear()
        self._writer.close()

    def _mark_last(self) -> None:
        """Give the ``-answer-last`` class to the last block (and only to it)."""
        children = self._target.children
        last = children[-1] if children and isinstance(children[-1], MarkdownBlock) else None
        if last is self._last_block:
            return
        if self._last_block is not None:
            self._last_block.remove_class("-answer-last")
        if last is not None:
            last.add_class("-answer-last")
        self._last_block = last

    # -- virtualization (called by the chat pane) --

    @property
    def hidden_blocks(self) -> int:
        """How many children (blocks or parts) are hidden above the view."""
        return len(self._hidden)

    def virtualize(self, hide_above: float, show_above: float) -> None:
        """Hide the children whose bottom is above ``hide_above``; show hidden ones again while
        the spacer reaches below ``show_above`` (rows from this block's content top).

        A hidden block of this widget is only ``display: none``; a hidden part is removed
        (its widgets and their caches are most of what the garbage collector has to walk)
        and made again from its text when it is shown."""
        if self._hidden:
            if self.size.width != self._hidden_width:
                self.reveal()  # their heights were measured at another width
                return
            if self._spacer_height() > show_above:
                while self._hidden and self._spacer_height() > show_above:
                    self._show_last_hidden()
                return  # what was shown is laid out before anything is measured again
        if self.size.width <= 0 or not self._ready or self._closed:
            return
        shown = [c for c in self.children if c.display and not isinstance(c, AnswerSpacer)]
        # The last child grows while the answer streams; once it is complete it may go too.
        done = self._finished and self._writer.idle
        hide: list[tuple[Widget, Region]] = []
        for child in shown if done else shown[:-1]:
            region = child.virtual_region
            if not region or region.bottom + child.styles.margin.bottom >= hide_above:
                break
            hide.append((child, region))
        if not hide:
            return
        if self._spacer is None or not self._spacer.is_mounted:
            if self._spacer is None:
                # Mounted first and used from the next call on: the children hidden and the
                # spacer standing in for them then land in the same frame.
                self._spacer = AnswerSpacer()
                self._spacer.display = False
                self.mount(self._spacer, before=0)
            return
        if len(hide) < len(shown):
            following = shown[len(hide)]
            height = following.virtual_region.y - following.styles.margin.top
        else:
            height = self.size.height - self.styles.gutter.height
        if height <= 0:
            return
        for child, region in hide:
            top = region.y - child.styles.margin.top
            child.display = False
            if isinstance(child, AnswerPart):
                self._hidden.append(_Hidden(None, top, child.source, region.height))
                child.remove()
            else:
                self._hidden.append(_Hidden(child, top, "", 0))
        self._hidden_width = self.size.width
        self._spacer.styles.height = height
        self._spacer.display = True

    def reveal(self) -> None:
        """Show every hidden child again."""
        while self._hidden:
            self._show_last_hidden()

    def _spacer_height(self) -> int:
        if self._spacer is None or not self._spacer.display:
            return 0
        height = self._spacer.styles.height
        return int(height.value) if height is not None else 0

    def _show_last_hidden(self) -> None:
        hidden = self._hidden.pop()
        if hidden.widget is not None:
            hidden.widget.display = True
        else:
            last = not any(c.display for c in self.children if not isinstance(c, AnswerSpacer))
            part = AnswerPart(hidden.source, height=hidden.height,
                              on_filled=self._last_part_filled if last else None)
            following = next((c for c in self.children if c.display and not isinstance(c, AnswerSpacer)), None)
            if following is not None:
                self.mount(part, before=following)
            else:
                self.mount(part)
        assert self._spacer is not None
        if self._hidden:
            self._spacer.styles.height = hidden.top
        else:
            self._spacer.display = False

    def _last_part_filled(self, part: AnswerPart) -> None:
        # The answer's last part, made again: its last block loses its bottom margin as before.
        self._target = part
        self._mark_last()


class _Hidden(NamedTuple):
    """A child hidden by ``AnswerBlock.virtualize``: the widget (None: a part, removed, made
    again from ``source``), and the spacer height that puts it back in place."""

    widget: Widget | None
    top: int
    source: str
    height: int


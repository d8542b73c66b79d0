"""The model's answer in the chat: Markdown drawn as one widget's lines, streamed behind a short
coalescing timer.

A token burst becomes one write every ``FLUSH_INTERVAL`` seconds instead of one per token, so
typing stays responsive while a long answer arrives. A write draws only the answer's last block
again; finished blocks keep the lines they were drawn as (see ``AnswerLines``), and the answer is
one widget however long it grows: nothing above the growing block is styled, laid out or resized
by a write. Model text is hostile (it can carry terminal escape sequences): it is stripped over
the stream before anything is written.
"""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.await_complete import AwaitComplete
from textual.dom import NoScreen
from textual.geometry import Region, Size
from textual.reactive import Reactive
from textual.selection import Selection
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget

from memory.text.terminal import TerminalStreamStripper
from widgets.chat.answer_lines import AnswerLines

__all__ = ["AnswerBlock"]


class AnswerBlock(Widget):
    """The model's answer as Markdown (fences highlighted once they are closed).

    ``append`` never waits on drawing: fragments are buffered and written at most every
    ``FLUSH_INTERVAL`` seconds. ``finish`` writes what is buffered and finishes the last block.
    Before the block has a width (not laid out yet) the text is only kept; it is drawn whole
    at the first width, and again whole when the width changes.

    Text in it can be selected and copied as drawn (a terminal's copy: bullets, indents and
    wrapped lines as shown).
    """

    # A write draws the answer's last block again and repaints the view: a few writes a second
    # read as fluid and leave the loop free for the keyboard.
    FLUSH_INTERVAL: ClassVar[float] = 0.12
    # A stream faster than anyone reads (a write of more than FAST_CHARS: some ten lines) is
    # written less often, up to every MAX_FLUSH_INTERVAL: the view moves by screens either way,
    # and the drawing per second stays a small part of a core however fast the tokens come.
    FAST_CHARS: ClassVar[int] = 500
    MAX_FLUSH_INTERVAL: ClassVar[float] = 0.5
    TYPING_FLUSH_INTERVAL: ClassVar[float] = 0.2  # ... and while the person types (see ``typing``)
    TYPING_S: ClassVar[float] = 0.3  # a key this recent: the person is typing

    # Textual lays the screen out again when a widget's virtual size changes, in the frame after
    # the layout that changed it: a second layout and full repaint per write. An answer does
    # not scroll: its virtual size is its size, set by that first layout.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False, repaint=False)

    DEFAULT_CSS = """
    AnswerBlock {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        &.-nested {
            margin: 0 0 0 4;
            color: $text-muted;
        }
    }
    """

    def __init__(self, depth: int = 0) -> None:
        super().__init__(classes="-nested" if depth else None)
        self.depth = depth
        self._received: list[str] = []
        # Stripped over the stream, not per fragment: a sequence cut between two fragments
        # would leave its tail (``31m``, ``]52;c;…``) on screen. ``_pending`` is stripped text.
        self._stripper = TerminalStreamStripper()
        self._pending: list[str] = []
        self._lines = AnswerLines()
        self._flush_timer: Timer | None = None
        self._flush_after_frame = False
        self._typed_at = float("-inf")  # the last key the App reported (``typing``)
        self._last_write = float("-inf")
        self._interval = self.FLUSH_INTERVAL  # the coalescing delay now (see FAST_CHARS)
        self._finished = False
        self._closed = False
        self._drawn: dict[int, tuple[Strip, Style, Strip]] = {}  # y -> (line, style, as drawn)
        self._dirty_from: int | None = None  # the first line the last writes changed
        self._render_state: tuple[Style, Selection | None] | None = None  # during ``render_lines``
        self._in_render = False

    @property
    def text(self) -> str:
        """All fragments received so far, as received (the display shows them sanitized)."""
        return "".join(self._received)

    @property
    def source(self) -> str:
        """The Markdown source written so far, as shown (stripped of terminal sequences)."""
        return self._lines.source

    @property
    def shown_text(self) -> str:
        """What is written so far (``source``): the stream's text as shown."""
        return self._lines.source

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def _ready(self) -> bool:
        """Laid out: it has a width to draw at."""
        return self._lines.width > 0

    @property
    def lines(self) -> list[Strip]:
        """The answer's drawn lines (at the current width)."""
        return self._lines.lines

    @property
    def shown_lines(self) -> list[str]:
        """The text of each drawn line, right-stripped."""
        return [line.text.rstrip() for line in self._lines.lines]

    # -- the stream --

    def append(self, fragment: str) -> AwaitComplete:
        """Add a fragment of the answer. Done when it returns (drawing is coalesced): the
        result is already complete."""
        if fragment and not self._finished and not self._closed:
            self._received.append(fragment)
            if shown := self._stripper.feed(fragment):
                self._pending.append(shown)
                self._schedule_flush()
        return AwaitComplete.nothing()

    def _schedule_flush(self) -> None:
        if (
            self._ready
            and self._pending
            and self._flush_timer is None
            and not self._flush_after_frame
            and not self._closed
        ):
            delay = self._interval
            now = time.monotonic()
            if now - self._typed_at < self.TYPING_S:
                # The person is typing: the next write goes right after a keystroke's frame
                # (``typing``); this timer only writes if the typing stops.
                delay = max(
                    self._last_write + self._typing_interval + self.TYPING_S - now, self.FLUSH_INTERVAL
                )
            self._flush_timer = self.set_timer(delay, self._flush)

    def _stop_timer(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None

    def flush(self) -> None:
        """The response's text is complete: write what is buffered now, without waiting for the
        timer. An escape sequence still open at this point ends here."""
        self._end_stream()
        self._stop_timer()
        self._flush()

    def _end_stream(self) -> None:
        if tail := self._stripper.flush():
            self._pending.append(tail)

    def typing(self) -> None:
        """A key was pressed. While the person types, the answer is written at most every
        ``TYPING_FLUSH_INTERVAL`` and only right after a keystroke's frame, so that the write
        is done before the next key and no keystroke waits behind one."""
        now = time.monotonic()
        self._typed_at = now
        if self._flush_after_frame:
            return
        self._stop_timer()
        if not self._pending:
            return
        if now - self._last_write >= self._typing_interval:
            self._flush_after_frame = True
            self.call_after_refresh(self._flush_now)
        else:
            self._schedule_flush()  # a fallback, should the typing stop

    @property
    def _typing_interval(self) -> float:
        # A stream faster than anyone reads is written less often while typing too.
        return max(self.TYPING_FLUSH_INTERVAL, self._interval)

    def _flush_now(self) -> None:
        self._flush_after_frame = False
        if self._flush_timer is None:
            self._flush()

    def _flush(self) -> None:
        self._flush_timer = None
        if self._closed or not (self._pending or self._finished):
            return
        chunk = "".join(self._pending)
        self._pending.clear()
        if not self._ready:
            self._lines.source += chunk  # drawn whole at the first width (``on_resize``)
            return
        self._last_write = time.monotonic()
        self._interval = min(
            self.MAX_FLUSH_INTERVAL,
            max(self.FLUSH_INTERVAL, self.FLUSH_INTERVAL * len(chunk) / self.FAST_CHARS),
        )
        height = self._lines.height
        changed = len(self._lines.finished)  # the first line a write can change
        self._lines.write(self.app.console, self.app.console.options, chunk, complete=self._finished)
        # Only the lines from the old tail on are drawn again; the lines above keep their cached
        # rendering, even though the block's height changes (see ``_set_dirty``).
        grown = self._lines.height != height
        self._dirty_from = changed if self._dirty_from is None else min(self._dirty_from, changed)
        self.refresh(
            Region(0, changed, max(self.size.width, 1), max(self._lines.height, height) - changed + 1),
            layout=grown,
        )

    def _set_dirty(self, *regions: Region) -> None:
        # Textual repaints all of a widget whose size changed: a streamed answer's size changes
        # at every write, and its lines above the last block do not. Its own growth repaints
        # from the first changed line; any other repaint (style, theme, width) all of it.
        if not regions and self._dirty_from is not None:
            changed, self._dirty_from = self._dirty_from, None
            height = max(self.size.height, self._lines.height)
            if height > changed:
                regions = (Region(0, changed, max(self.size.width, 1), height - changed),)
        super()._set_dirty(*regions)

    async def finish(self) -> None:
        """The answer is complete: write what is still buffered and finish its last block."""
        if self._finished or self._closed:
            self._finished = True
            return
        self._finished = True
        self._end_stream()
        self._stop_timer()
        self._flush()

    READY_FRAMES: ClassVar[int] = 10  # frames ``drawn`` waits for a block mounted a moment ago

    async def drawn(self) -> None:
        """Write every fragment received so far now (no coalescing wait) and return after the
        frame that shows it. The stream goes on: an escape sequence still open stays held (call
        ``flush`` first when the response is complete). A block mounted a moment ago (a short
        answer arrives whole) is first laid out: its first width draws it. Returns at once when
        the block is removed."""
        for _ in range(self.READY_FRAMES):
            if self._ready or self._closed or not self.is_attached:
                break
            if not await self._next_frame():
                return
        if self._closed or not self._ready:
            return
        self._stop_timer()
        self._flush()
        if self.is_attached:
            await self._next_frame()

    async def _next_frame(self) -> bool:
        """After the next frame; False when no frame can come (the App is closing)."""
        shown: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def frame_done() -> None:
            if not shown.done():
                shown.set_result(None)

        # The App's queue, not this widget's: a block removed meanwhile would drop the callback.
        if not self.app.call_after_refresh(frame_done):
            return False
        await shown
        return True

    async def on_unmount(self) -> None:
        # Pruned or cleared (maybe mid-stream): later appends are dropped.
        self._closed = True
        self._stop_timer()
        self._pending.clear()

    # -- drawing --

    def on_resize(self) -> None:
        width = self.size.width
        if width > 0 and width != self._lines.width:
            self._pending_to_source()
            self._lines.redraw(self.app.console, self.app.console.options, width, complete=self._finished)
            self._drawn.clear()
            self._dirty_from = None
            self.refresh(layout=True)
            if self._pending:
                self._schedule_flush()

    def _pending_to_source(self) -> None:
        if not self._ready and self._pending:
            self._lines.source += "".join(self._pending)
            self._pending.clear()

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        if width != self._lines.width and width > 0:
            # Measured at a width it is not drawn at yet (its first layout): draw it now, so that
            # the height is right in the same layout.
            self._pending_to_source()
            self._lines.redraw(self.app.console, self.app.console.options, width, complete=self._finished)
            self._drawn.clear()
        return self._lines.height

    def render_lines(self, crop: Region) -> list[Strip]:
        # The widget's style and selection are the same for every line of one render: looked up
        # once, by the first line drawn (``rich_style`` walks the ancestors' styles: most of a
        # line's cost otherwise). Not before: lines the cache serves need neither, and a block
        # removed under a modal screen (a session switch) is still drawn behind it, screenless.
        self._in_render = True
        try:
            return super().render_lines(crop)
        finally:
            self._in_render, self._render_state = False, None

    def _style_and_selection(self) -> tuple[Style, Selection | None]:
        state = self._render_state
        if state is None:
            try:
                selection = self.text_selection
            except NoScreen:  # removed, drawn once more behind a modal: no selection to show
                selection = None
            state = (self.rich_style, selection)
            if self._in_render:
                self._render_state = state
        return state

    def render_line(self, y: int) -> Strip:
        style, selection = self._style_and_selection()
        line = self._lines.line(y)
        if line is None:
            return Strip.blank(self.size.width, style)
        if selection is not None and (span := selection.get_span(y)) is not None:
            return self._select(line.apply_style(style), span).apply_offsets(0, y)
        # A finished line is drawn the same at every frame (the view scrolls on each write):
        # styled and given its selection offsets once.
        cached = self._drawn.get(y)
        if cached is not None and cached[0] is line and cached[1] == style:
            return cached[2]
        drawn = line.apply_style(style).apply_offsets(0, y)
        self._drawn[y] = (line, style, drawn)
        return drawn

    def _select(self, line: Strip, span: tuple[int, int]) -> Strip:
        text = line.text
        start, end = span
        end = len(text) if end == -1 else min(end, len(text))
        if end <= start:
            return line
        first, last = cell_len(text[:start]), cell_len(text[:end])
        style = self.screen.get_component_rich_style("screen--selection")
        marked = Strip(Segment.apply_style(list(line.crop(first, last)), post_style=style))
        return Strip.join([line.crop(0, first), marked, line.crop(last)])

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        chosen = selection.extract("\n".join(line.text for line in self._lines.lines))
        return "\n".join(row.rstrip() for row in chosen.split("\n")), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self._dirty_from = None
        self.refresh()

"""The chat pane's blocks: one widget per thing that happened in the conversation.

Model and tool text is hostile (a file or a web page can carry terminal escape sequences), so
every string shown here passes ``strip_terminal`` first. Answers stream behind a short
coalescing timer: a token burst becomes one Markdown append every ``FLUSH_INTERVAL`` seconds
instead of one per token, so typing stays responsive while a long answer arrives (re-rendering
per token is O(n²) — the Elia mistake).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import deque
from collections.abc import Callable
from typing import Any, ClassVar, Literal, NamedTuple

from textual import events
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Region
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownBlock

from memory.text.sanitize import TerminalStreamStripper, line_count, strip_terminal

__all__ = [
    "AnswerBlock",
    "AnswerPart",
    "AnswerSpacer",
    "ErrorBlock",
    "NoteBlock",
    "ToolBlock",
    "ToolStatus",
    "UserBlock",
    "bash_view",
    "summarize_args",
]

ToolStatus = Literal["streaming", "waiting", "running", "done", "error", "denied"]


def _one_line(text: str) -> str:
    return " ".join(strip_terminal(text, keep_newlines=False).split())


class _TextBlock(Static):
    """A block of plain text: terminal sequences stripped, never parsed as markup; ``text`` keeps the original."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(self.render_text(text))

    @staticmethod
    def render_text(text: str) -> Content:
        return Content(strip_terminal(text))


class UserBlock(_TextBlock):
    """What the user sent, as plain text (never markup: ``[b]`` stays ``[b]``).

    ``text`` is the whole message as sent. A large paste shows as its placeholder (``pastes``:
    placeholder -> pasted text, as the prompt made them) until a click or Enter expands it;
    expanded, each paste shows at most ``EXPANDED_LINES`` lines. ``set_note`` puts a dim line
    under the message (queued until the model is connected, not sent, …)."""

    EXPANDED_LINES: ClassVar[int] = 1_000
    EXPANDED_CHARS: ClassVar[int] = 100_000

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle", "Expand/collapse", show=False),
    ]

    DEFAULT_CSS = """
    UserBlock {
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: outer $primary;
        background: $primary 10%;
        color: $text;
        &.-note {
            border-left: outer $warning;
        }
        &:focus {
            background: $primary 25%;
        }
    }
    """

    expanded: reactive[bool] = reactive(False, init=False)

    def __init__(self, text: str, pastes: dict[str, str] | None = None) -> None:
        from widgets.chat.prompt import expand_pastes

        self.typed = text
        """The message as the prompt showed it (paste placeholders kept)."""
        self.pastes = {label: pasted for label, pasted in (pastes or {}).items() if label in text}
        self.note = ""
        self.text = expand_pastes(text, self.pastes)
        Static.__init__(self)  # the reactives exist from here on
        self.update(self._content())
        self.can_focus = bool(self.pastes)  # Enter expands: only a block with something to expand

    @property
    def shown_text(self) -> str:
        """The block as drawn now, plain text."""
        return self._content().plain

    def set_note(self, note: str | None) -> None:
        """A dim line under the message (None: none)."""
        self.note = note or ""
        self.set_class(bool(self.note), "-note")
        self.update(self._content())

    def toggle(self) -> None:
        if self.pastes:
            self.expanded = not self.expanded

    def action_toggle(self) -> None:
        self.toggle()

    def on_click(self, event: events.Click) -> None:
        if self.pastes:
            event.stop()
            self.toggle()

    def watch_expanded(self, expanded: bool) -> None:
        self.update(self._content())

    def _content(self) -> Content:
        parts: list[str | tuple[str, str]] = []
        if not self.pastes:
            parts.append(strip_terminal(self.text))
        else:
            pattern = re.compile("|".join(re.escape(label) for label in sorted(self.pastes, key=len, reverse=True)))
            at = 0
            for m in pattern.finditer(self.typed):
                parts.append(strip_terminal(self.typed[at : m.start()]))
                label = m.group(0)
                parts.append((label, "bold $accent"))
                if self.expanded:
                    parts.append("\n" + self._pasted_shown(self.pastes[label]))
                at = m.end()
            parts.append(strip_terminal(self.typed[at:]))
            hint = "collapse" if self.expanded else "show the pasted text"
            parts.append((f"\n(click or Enter: {hint})", "$foreground-muted italic"))
        if self.note:
            parts.append((f"\n{_one_line(self.note)}", "$text-warning italic"))
        return Content.assemble(*parts)

    def _pasted_shown(self, pasted: str) -> str:
        lines = strip_terminal(pasted).splitlines()
        head = "\n".join(lines[: self.EXPANDED_LINES])
        if len(lines) > self.EXPANDED_LINES or len(head) > self.EXPANDED_CHARS:
            return head[: self.EXPANDED_CHARS] + f"\n… cut here: {len(lines):,} lines in all (the model got them all)"
        return head



class NoteBlock(_TextBlock):
    """A one-line remark from the app (a command's answer, "cancelled", "resumed session …")."""

    DEFAULT_CSS = """
    NoteBlock {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $text-muted;
    }
    """



class ErrorBlock(_TextBlock):
    """One readable error (401, 429, a refused connection …): never a traceback."""

    DEFAULT_CSS = """
    ErrorBlock {
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: outer $error;
        background: $error 10%;
        color: $text-error;
    }
    """

    @staticmethod
    def render_text(text: str) -> Content:
        return Content.assemble(("✗ ", "bold"), strip_terminal(text))


class AnswerSpacer(Widget):
    """Stands in for an answer's blocks hidden far above the view: their height, nothing drawn."""

    DEFAULT_CSS = """
    AnswerSpacer {
        height: 0;
        margin: 0;
        padding: 0;
    }
    """


class AnswerPart(Markdown):
    """A later part of a long answer: its own Markdown document, laid out on its own.

    Textual re-arranges a list or a fence whenever the height of the Markdown widget holding
    it changes, so while one widget grows with the stream every list and fence above is laid
    out again on each write. A part stops growing once the next one starts, and the blocks in
    it are left alone. Parts start only before a paragraph, a list or a rule (blocks without a
    top margin), so the gap between two parts is the one a single document would have.
    """

    DEFAULT_CSS = """
    AnswerPart {
        padding: 0;
        margin: 0;
        & > .answer-part--pin {
            height: 0;
        }
    }
    AnswerBlock.-nested > AnswerPart {
        color: $text-muted;
    }
    """

    def __init__(self, markdown: str | None = None, *, height: int | None = None,
                 on_filled: Callable[[AnswerPart], None] | None = None) -> None:
        super().__init__(markdown)
        # A part made again from its text (scrolled back into view) keeps its old height
        # until its blocks are there, so that nothing below it moves meanwhile.
        if height is not None:
            self.styles.min_height = height
        self._on_filled = on_filled

    def compose(self):  # type: ignore[no-untyped-def]
        # A child of fixed height: Textual measures a container whose children all have a
        # dynamic height against its parent's height, which grows with every write, and so
        # re-arranges all of it each time; with this pin the part is measured on its own.
        yield Widget(classes="answer-part--pin")

    def on_mount(self) -> None:
        # Runs before Markdown._on_mount (which renders the initial text); call_later after it.
        if self._on_filled is not None:
            self.call_later(self._filled)

    def _filled(self) -> None:
        self.styles.min_height = None
        if self._on_filled is not None:
            self._on_filled(self)


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

    async def append(self, fragment: str) -> None:
        """Add a fragment of the answer; returns at once (rendering is coalesced)."""
        if not fragment or self._finished or self._closed:
            return
        self._received.append(fragment)
        if shown := self._stripper.feed(fragment):
            self._pending.append(shown)
            self._schedule_flush()

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


# -- tool calls --------------------------------------------------------------------------

# Inputs that say what a call does, in the order a reader wants them, for a tool not below.
_PRIMARY_KEYS = ("command", "description", "pattern", "path", "filename", "level", "glob", "query", "url")
# DESIGN §9's tools: the telling inputs first, each with its format ("{}" is the value); the
# other inputs follow as ``key=value``. "in {}" reads "grep  bash_timeout  in app/".
_TOOL_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "read_file": (("path", "{}"),),
    "list_files": (("pattern", "{}"), ("path", "in {}")),
    "grep": (("pattern", "{}"), ("path", "in {}"), ("glob", "files {}")),
    "write_file": (("path", "{}"),),
    "edit_file": (("path", "{}"),),
    "bash": (("command", "{}"),),
    "read_memory": (("filename", "{}"), ("level", "{} level")),
    "task": (("description", "{}"),),
}
# Inputs too large for one line: shown as their size.
_BULKY_KEYS = frozenset({"content", "old_string", "new_string", "prompt"})
_ARGS_MAX = 300


def _size(text: str) -> str:
    lines = line_count(text)  # the permission dialog's count too
    return f"{lines} line{'s' if lines != 1 else ''}"


def summarize_args(args: dict[str, Any], tool: str | None = None) -> str:
    """A tool call's input as one short line: the telling values first (in ``tool``'s own
    order when it is one of DESIGN §9's tools), bulky ones as a size."""
    keys = _TOOL_KEYS.get(tool or "") or tuple((key, "{}") for key in _PRIMARY_KEYS)
    parts: list[str] = []
    first: set[str] = set()
    for key, fmt in keys:
        value = args.get(key)
        if isinstance(value, str) and (one := _one_line(value)):
            # "in app/" reads only after a pattern; alone it is just the path.
            parts.append(fmt.format(one) if parts or not fmt.startswith("in ") else one)
            first.add(key)
    for key, value in args.items():
        if key in first:
            continue
        if value is None or value == "" or value is False:
            continue
        if key in _BULKY_KEYS and isinstance(value, str):
            parts.append(f"{key}: {_size(value)}")
        elif isinstance(value, str):
            parts.append(f"{key}={value}")
        else:
            try:
                parts.append(f"{key}={json.dumps(value, ensure_ascii=False, default=str)}")
            except (TypeError, ValueError):
                parts.append(f"{key}=…")
    line = "  ".join(one for part in parts if (one := _one_line(part)))
    return line if len(line) <= _ARGS_MAX else line[: _ARGS_MAX - 1] + "…"


# The result format of app/agent/tools/shell.py's bash tool: a status line, optional "[…]" notes,
# then "--- stdout ---" / "--- stderr ---" sections or "(no output)".
_BASH_EXIT_RE = re.compile(r"exit code: (-?\d+)(?: \(killed by ([^)]*)\))?")
_BASH_TIMEOUT_RE = re.compile(r"timed out after (\S+) s\b.*")
_BASH_STDOUT = "--- stdout ---"
_BASH_STDERR = "--- stderr ---"
_BASH_NO_OUTPUT = "(no output)"


def bash_view(text: str) -> tuple[str, str, bool] | None:
    """A bash result as shown: (status for the header such as "exit 0", the output to show,
    whether the exit code is non-zero). The output comes first, with the status line and the
    leading section marker left out (they filled the collapsed excerpt before any output); the
    tool's "[…]" notes follow it. None when ``text`` is not in the bash tool's format."""
    lines = text.split("\n")
    if m := _BASH_EXIT_RE.fullmatch(lines[0]):
        code = int(m.group(1))
        status = f"exit {code}" + (f" {m.group(2)}" if m.group(2) else "")
        failed = code != 0
    elif m := _BASH_TIMEOUT_RE.fullmatch(lines[0]):
        status, failed = f"timed out after {m.group(1)} s", True
    else:
        return None
    i = 1
    notes: list[str] = []
    while i < len(lines) and lines[i].startswith("[") and lines[i].endswith("]"):
        notes.append(lines[i])
        i += 1
    rest = lines[i:]
    if rest[:1] == [_BASH_NO_OUTPUT]:
        rest = rest[1:]
    elif rest[:1] in ([_BASH_STDOUT], [_BASH_STDERR]):
        # Only stderr: the red excerpt and the exit status say enough; a stderr after stdout
        # keeps its marker.
        rest = rest[1:]
    else:
        return None
    return status, "\n".join(rest + notes), failed


# Span styles use $foreground-muted, not $text-muted: that one is "auto 60%", which a Content
# span cannot blend (it renders white); in CSS rules $text-muted is fine.
_STATUS_LOOK: dict[str, tuple[str, str, str]] = {
    # status: (glyph, label, style)
    "streaming": ("◌", "preparing", "$foreground-muted"),
    "waiting": ("?", "waiting for permission", "$text-warning"),
    "running": ("●", "running…", "$text-primary"),
    "done": ("✓", "", "$text-success"),
    "error": ("✗", "error", "$text-error"),
    "denied": ("⊘", "denied", "$text-warning"),
}


class ToolBlock(Widget, can_focus=True):
    """One tool call: a compact header (status glyph, name, one-line arguments, status) and,
    once finished, a result excerpt that Enter or a click expands. A sub-agent's calls nest
    under its ``task`` block through ``add_child``."""

    COLLAPSED_LINES: ClassVar[int] = 3
    EXPANDED_LINES: ClassVar[int] = 200
    EXPANDED_CHARS: ClassVar[int] = 20_000

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle", "Expand/collapse", show=False),
    ]

    DEFAULT_CSS = """
    ToolBlock {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        & > .tool--header {
            text-wrap: nowrap;
            text-overflow: ellipsis;
        }
        & > .tool--result {
            display: none;
            margin: 0 0 0 2;
            padding: 0 1;
            border-left: solid $foreground 20%;
            color: $text-muted;
            /* Collapsed: one row per line, so the excerpt stays a few rows high. */
            text-wrap: nowrap;
            text-overflow: ellipsis;
        }
        &.-expanded > .tool--result {
            text-wrap: wrap;
            text-overflow: fold;
        }
        &.-has-result > .tool--result {
            display: block;
        }
        &.-error > .tool--result {
            color: $text-error;
        }
        & > .tool--children {
            display: none;
            height: auto;
            margin: 0 0 0 2;
        }
        &.-has-children > .tool--children {
            display: block;
        }
        &.-nested {
            margin: 0;
            padding: 0 0 0 1;
        }
        &:focus {
            background: $boost;
        }
        &:focus > .tool--header {
            text-style: bold;
        }
    }
    """

    status: reactive[str] = reactive("streaming", init=False)
    expanded: reactive[bool] = reactive(False, init=False)

    def __init__(self, call_id: str, name: str, depth: int = 0) -> None:
        super().__init__(classes="-nested" if depth else None)
        self.call_id = call_id
        self.tool_name = name
        self.depth = depth
        self.args_line = ""
        self.result_text: str | None = None
        self._bash: tuple[str, str, bool] | None = None
        self._shown = ""  # the part of the result the excerpt shows (bash: output first)
        self.excerpt = ""
        """The result as currently shown (collapsed or expanded), plain text."""
        self.header_text = ""
        """The header line as shown (glyph, name, arguments, status), plain text."""
        self._nbytes = 0
        self._children: dict[str, ToolBlock] = {}
        self._header = Static(classes="tool--header")
        self._result = Static(classes="tool--result")
        self._children_box = Vertical(classes="tool--children")
        self._render_header()

    def compose(self):  # type: ignore[no-untyped-def]
        yield self._header
        yield self._result
        yield self._children_box

    # -- state changes (called by the App) --

    def set_streaming(self, nbytes: int) -> None:
        """The model is still writing the call's arguments (``nbytes`` so far)."""
        self._nbytes = nbytes
        self.status = "streaming"
        self._render_header()

    def set_waiting(self, args: dict[str, Any]) -> None:
        """The call is complete and waits for the person's answer in the permission window."""
        self.args_line = summarize_args(args, self.tool_name)
        self.status = "waiting"
        self._render_header()

    def set_running(self, args: dict[str, Any] | None = None) -> None:
        """The call runs (``args``: its input; None keeps what ``set_waiting`` showed)."""
        if args is not None:
            self.args_line = summarize_args(args, self.tool_name)
        self.status = "running"
        self._render_header()

    def set_result(self, text: str, *, is_error: bool, denied: bool) -> None:
        self.result_text = strip_terminal(text)
        self.status = "denied" if denied else "error" if is_error else "done"
        self._bash = bash_view(self.result_text) if self.tool_name == "bash" and not denied else None
        self._shown = self._bash[1] if self._bash is not None else self.result_text
        self.set_class(is_error or denied, "-error")
        self.set_class(bool(self._shown.strip()), "-has-result")
        self._render_header()
        self._render_result()

    def add_child(self, call_id: str, name: str) -> ToolBlock:
        """A call made by this (``task``) call's sub-agent, shown nested under it."""
        child = ToolBlock(call_id, name, depth=self.depth + 1)
        self._children[call_id] = child
        self.add_class("-has-children")
        box = self._children_box
        if box.is_attached:
            box.mount(child)
        else:
            box.compose_add_child(child)  # this block is not mounted yet: mounts with it
        return child

    def find(self, call_id: str) -> ToolBlock | None:
        """This block or a nested one with ``call_id``."""
        if call_id == self.call_id:
            return self
        for child in self._children.values():
            found = child.find(call_id)
            if found is not None:
                return found
        return None

    def toggle(self) -> None:
        self.expanded = not self.expanded

    # -- input --

    def action_toggle(self) -> None:
        self.toggle()

    def on_click(self, event: events.Click) -> None:
        event.stop()  # a click on a nested call toggles that call, not its task too
        self.toggle()

    def watch_expanded(self, expanded: bool) -> None:
        self.set_class(expanded, "-expanded")
        self._render_result()

    # -- drawing --

    def _render_header(self) -> None:
        glyph, label, style = _STATUS_LOOK.get(self.status, ("?", self.status, ""))
        exit_status = ""
        if self.status == "streaming" and self._nbytes:
            label = f"preparing ({_bytes(self._nbytes)})"
        elif self._bash is not None:
            exit_status, output, failed = self._bash
            label = _size(output) if output.strip() else "no output"
            style = "$text-error" if failed else style
        elif self.status == "done" and self.result_text is not None:
            label = _size(self.result_text) if self.result_text else "no output"
        parts: list[str | tuple[str, str]] = [(glyph + " ", style), (_one_line(self.tool_name), "bold")]
        if exit_status:
            # Before the command: a long command line is cut at the right edge, the exit code never.
            parts.append(("  " + exit_status, style))
        if self.args_line:
            parts.append(("  " + self.args_line, "$foreground-muted"))
        if label:
            parts.append(("  " + label, style))
        content = Content.assemble(*parts)
        self.header_text = content.plain
        self._header.update(content)

    def _render_result(self) -> None:
        text = self._shown
        lines = text.splitlines()
        if self.expanded:
            shown = lines[: self.EXPANDED_LINES]
            body = "\n".join(shown)
            cut = len(body) > self.EXPANDED_CHARS
            body = body[: self.EXPANDED_CHARS]
            hidden = len(lines) - len(shown)
            tail = ""
            if hidden > 0 or cut:
                tail = f"\n… output cut ({len(lines)} lines in all)"
            hint = "" if len(lines) <= self.COLLAPSED_LINES else "\n(enter: collapse)"
            content = Content.assemble(body, (tail, "italic"), (hint, "$foreground-muted italic"))
        else:
            shown = [line[:500] for line in lines[: self.COLLAPSED_LINES]]
            hidden = len(lines) - len(shown)
            tail = f"\n… {hidden} more line{'s' if hidden != 1 else ''} (enter: expand)" if hidden > 0 else ""
            content = Content.assemble("\n".join(shown), (tail, "$foreground-muted italic"))
        self.excerpt = content.plain
        self._result.update(content)


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = n / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"

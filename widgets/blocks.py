"""The chat pane's blocks: one widget per thing that happened in the conversation.

Model and tool text is hostile (a file or a web page can carry terminal escape sequences), so
every string shown here passes ``strip_terminal`` first. Answers stream through Textual's
``MarkdownStream`` behind a short coalescing timer: a token burst becomes one Markdown append
every ``FLUSH_INTERVAL`` seconds instead of one per token, so typing stays responsive while a
long answer arrives (re-rendering per token is O(n²) — the Elia mistake).
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar, Literal

from textual import events
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from memory.sanitize import strip_terminal

__all__ = [
    "AnswerBlock",
    "ErrorBlock",
    "NoteBlock",
    "ToolBlock",
    "ToolStatus",
    "UserBlock",
    "bash_view",
    "summarize_args",
]

ToolStatus = Literal["streaming", "running", "done", "error", "denied"]


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
    """What the user sent, as plain text (never markup: ``[b]`` stays ``[b]``)."""

    DEFAULT_CSS = """
    UserBlock {
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: outer $primary;
        background: $primary 10%;
        color: $text;
    }
    """



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


class AnswerBlock(Markdown):
    """The model's answer as Markdown (fenced code is highlighted by Markdown's fences).

    ``append`` never waits on rendering: fragments are buffered and written to one
    ``MarkdownStream`` at most every ``FLUSH_INTERVAL`` seconds; the stream itself merges what
    arrives while the widget is still busy with the previous append. ``finish`` flushes and,
    once the block is mounted, waits until everything received is rendered; before that it
    returns at once and the whole text is rendered in one update on mount (a resumed history
    of many blocks does not wait a mount per block).
    """

    FLUSH_INTERVAL: ClassVar[float] = 0.04

    DEFAULT_CSS = """
    AnswerBlock {
        margin: 1 0 0 0;
        padding: 0 1;
        &.-nested {
            margin: 0 0 0 4;
            color: $text-muted;
        }
        & > MarkdownBlock:last-child {
            margin-bottom: 0;
        }
    }
    """

    def __init__(self, depth: int = 0) -> None:
        super().__init__(None, classes="-nested" if depth else None)
        self.depth = depth
        self._received: list[str] = []
        self._pending: list[str] = []
        self._stream: MarkdownStream | None = None
        self._flush_timer: Timer | None = None
        # Markdown's own mount handler replaces the document with "" (its initial update):
        # nothing may be written before that has run.
        self._ready = False
        self._finished = False
        self._closed = False

    @property
    def text(self) -> str:
        """All fragments received so far, as received (the display shows them sanitized)."""
        return "".join(self._received)

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
        else:
            self._schedule_flush()

    async def append(self, fragment: str) -> None:
        """Add a fragment of the answer; returns at once (rendering is coalesced)."""
        if not fragment or self._finished or self._closed:
            return
        self._received.append(fragment)
        self._pending.append(fragment)
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        if self._ready and self._pending and self._flush_timer is None and not self._closed:
            self._flush_timer = self.set_timer(self.FLUSH_INTERVAL, self._flush)

    async def _flush(self, *, final: bool = False) -> None:
        self._flush_timer = None
        if not self._pending or self._closed:
            return
        raw = "".join(self._pending)
        self._pending.clear()
        if not final and (held := _unfinished_escape(raw)):
            # An escape sequence cut between fragments: wait for its end so that it goes whole
            # (else its tail, such as "31m", would show as text).
            raw, self._pending = raw[: -len(held)], [held]
            self._schedule_flush()
        chunk = strip_terminal(raw)
        if not chunk:
            return
        if self._stream is None:
            self._stream = _stream_into(self)
        await self._stream.write(chunk)

    async def finish(self) -> None:
        """The answer is complete: show what is still buffered and wait until it is rendered."""
        if self._finished or self._closed:
            self._finished = True
            return
        self._finished = True
        if not self._ready:
            return  # _become_ready renders the whole text once the widget is mounted
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        await self._flush(final=True)
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()
        # stop() leaves an append it interrupted running (shielded); that append holds or waits
        # for the widget's lock, so taking the lock once waits for it to land.
        async with self.lock:
            pass

    async def on_unmount(self) -> None:
        # Pruned or cleared (maybe mid-stream): later appends are dropped, the stream task ends.
        self._closed = True
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        self._pending.clear()
        if self._stream is not None:
            stream, self._stream = self._stream, None
            try:
                await stream.stop()
            except Exception:  # the widget is going away; a failed last append is harmless
                pass


# The start of an escape sequence (CSI, a control string, a plain ESC) that has not ended yet.
_UNFINISHED_ESCAPE_RE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*\Z"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*\Z"
    r"|\x1b[ -/]*\Z"
)
_HOLD_MAX = 256


def _unfinished_escape(text: str) -> str:
    """The tail of ``text`` that is an escape sequence still being received ("" if none)."""
    low = max(len(text) - _HOLD_MAX, 0)
    start = max(text.rfind(c, low) for c in "\x1b\x9b\x90\x98\x9d\x9e\x9f")
    if start < 0:
        return ""
    m = _UNFINISHED_ESCAPE_RE.match(text, start)
    return m.group(0) if m else ""


class _MarkdownSink:
    """What ``MarkdownStream`` writes to: Markdown's own ``append``. ``AnswerBlock.append`` (the
    App's entry point, part of the agreed interface) shadows that name on the block itself."""

    def __init__(self, block: Markdown) -> None:
        self._block = block

    def append(self, markdown: str):  # type: ignore[no-untyped-def]
        return Markdown.append(self._block, markdown)


def _stream_into(block: Markdown) -> MarkdownStream:
    """``Markdown.get_stream(block)``, writing through ``Markdown.append``."""
    stream = MarkdownStream(_MarkdownSink(block))  # type: ignore[arg-type]
    stream.start()
    return stream


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
    lines = text.count("\n") + 1 if text else 0
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


# The result format of app/tools/shell.py's bash tool: a status line, optional "[…]" notes,
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

    def set_running(self, args: dict[str, Any]) -> None:
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
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"

"""One tool call in the chat: a compact header and, once finished, a result excerpt.

The block knows no tool by name: whoever makes it passes the call's display keys (which inputs
tell what the call does, with their formats) and, for a result the tool gave structure to (a
shell command's exit status and output), a ``ResultView``; without one the result is plain text.
Tool text is hostile (a file or a web page can carry terminal escape sequences): every string
shown passes ``strip_terminal`` first, and none is parsed as markup.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from memory.text.lines import ELLIPSIS, one_line
from memory.text.terminal import strip_terminal
from widgets.chat.sizes import lines_label, size_label

__all__ = ["DisplayKeys", "ResultView", "ToolArgs", "ToolBlock", "ToolStatus", "summarize_args"]

ToolStatus = Literal["streaming", "waiting", "running", "done", "error", "denied"]
# (input name, format) pairs: the inputs that tell what a call does, most telling first; "{}" is
# the value ("in {}" reads "grep  bash_timeout  in app/").
DisplayKeys = Sequence[tuple[str, str]]


@dataclass(frozen=True)
class ResultView:
    """A result as its tool structured it: ``status`` for the header ("exit 0", "timed out
    after 5 s", shown before the arguments so a long command never hides it), ``output`` shown
    in place of the raw text, ``failed`` colours the header as an error."""

    status: str
    output: str
    failed: bool


# A tool call's input as the model wrote it: a JSON object.
Json = str | int | float | bool | None | list["Json"] | dict[str, "Json"]
ToolArgs = dict[str, Json]

# Inputs that say what a call does, in the order a reader wants them, when no keys are given.
_PRIMARY_KEYS = ("command", "description", "pattern", "path", "filename", "level", "glob", "query", "url")
# Inputs too large for one line: shown as their size.
_BULKY_KEYS = frozenset({"content", "old_string", "new_string", "prompt", "plan"})
_ARGS_MAX = 300


def summarize_args(args: ToolArgs, keys: DisplayKeys = ()) -> str:
    """A tool call's input as one short line: the telling values first (``keys``, else the
    generic order), each in its format; the other inputs as ``key=value``, bulky ones as a size."""
    order = tuple(keys) or tuple((key, "{}") for key in _PRIMARY_KEYS)
    parts: list[str] = []
    first: set[str] = set()
    for key, fmt in order:
        value = args.get(key)
        if isinstance(value, str) and (one := one_line(value)):
            # "in app/" reads only after a pattern; alone it is just the path.
            parts.append(fmt.format(one) if parts or not fmt.startswith("in ") else one)
            first.add(key)
    for key, value in args.items():
        if key in first or value is None or value == "" or value is False:
            continue
        parts.append(_arg_text(key, value))
    line = "  ".join(one for part in parts if (one := one_line(part)))
    return line if len(line) <= _ARGS_MAX else line[: _ARGS_MAX - 1] + ELLIPSIS


def _arg_text(key: str, value: object) -> str:
    if key in _BULKY_KEYS and isinstance(value, str):
        return f"{key}: {lines_label(value)}"
    if isinstance(value, str):
        return f"{key}={value}"
    try:
        return f"{key}={json.dumps(value, ensure_ascii=False, default=str)}"
    except (TypeError, ValueError):
        return f"{key}=…"


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


def _seconds(s: float) -> str:
    """A hook's time as it reads true: "12ms" below a tenth of a second (never "0.0s"), "1.4s" past it."""
    return f"{max(s * 1000, 1):.0f}ms" if s < 0.1 else f"{s:.1f}s"


class ToolBlock(Widget, can_focus=True):
    """One tool call: a compact header (status glyph, name, one-line arguments, status) and,
    once finished, a result excerpt that Enter or a click expands. A sub-agent's calls nest
    under the block of the call that started it, through ``add_child``."""

    COLLAPSED_LINES: ClassVar[int] = 3
    EXPANDED_LINES: ClassVar[int] = 200
    EXPANDED_CHARS: ClassVar[int] = 20_000

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle_expanded", "Expand/collapse", show=False),
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

    def __init__(self, call_id: str, name: str, depth: int = 0, *, display_keys: DisplayKeys = ()) -> None:
        super().__init__(classes="-nested" if depth else None)
        self.call_id = call_id
        self.tool_name = name
        self.depth = depth
        self.display_keys: tuple[tuple[str, str], ...] = tuple(display_keys)
        self.args_line = ""
        self.result_text: str | None = None
        self._view: ResultView | None = None
        self._shown = ""  # the part of the result the excerpt shows (a view's output)
        self.excerpt = ""
        """The result as currently shown (collapsed or expanded), plain text."""
        self.header_text = ""
        """The header line as shown (glyph, name, arguments, status), plain text."""
        self._nbytes = 0
        self.hook_s = 0.0  # seconds the call's hooks took (shown in the header when > 0)
        self.hook_failed = 0  # how many of them failed (shown in the header in the error colour)
        self._children: dict[str, ToolBlock] = {}
        self._header = Static(classes="tool--header")
        self._result = Static(classes="tool--result")
        self._children_box = Vertical(classes="tool--children")
        self._render_header()

    def compose(self) -> ComposeResult:
        yield self._header
        yield self._result
        yield self._children_box

    # -- state changes (called by the App) --

    def set_streaming(self, nbytes: int) -> None:
        """The model is still writing the call's arguments (``nbytes`` so far)."""
        self._nbytes = nbytes
        self.status = "streaming"
        self._render_header()

    def set_waiting(self, args: ToolArgs) -> None:
        """The call is complete and waits for the person's answer in the permission window."""
        self.args_line = summarize_args(args, self.display_keys)
        self.status = "waiting"
        self._render_header()

    def set_running(self, args: ToolArgs | None = None) -> None:
        """The call runs (``args``: its input; None keeps what ``set_waiting`` showed)."""
        if args is not None:
            self.args_line = summarize_args(args, self.display_keys)
        self.status = "running"
        self._render_header()

    def set_result(
        self,
        text: str,
        is_error: bool,
        denied: bool,
        *,
        view: ResultView | None = None,
        hook_s: float = 0.0,
        hook_failed: int = 0,
    ) -> None:
        """The call finished: ``text`` as the model got it; ``view`` (not for a denied call) is
        what the header and the excerpt show instead of the plain text; ``hook_s``: the seconds
        its hooks took, ``hook_failed``: how many of them failed."""
        self.hook_s, self.hook_failed = hook_s, hook_failed
        self.result_text = strip_terminal(text)
        self.status = "denied" if denied else "error" if is_error else "done"
        self._view = None
        if view is not None and not denied:
            self._view = ResultView(one_line(view.status), strip_terminal(view.output), view.failed)
        self._shown = self._view.output if self._view is not None else self.result_text
        self.set_class(is_error or denied, "-error")
        self.set_class(bool(self._shown.strip()), "-has-result")
        self._render_header()
        self._render_result()

    def add_child(self, call_id: str, name: str, *, display_keys: DisplayKeys = ()) -> ToolBlock:
        """A call made by the sub-agent this call started, shown nested under it."""
        child = ToolBlock(call_id, name, depth=self.depth + 1, display_keys=display_keys)
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

    def action_toggle_expanded(self) -> None:
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
            label = f"preparing ({size_label(self._nbytes)})"
        elif self._view is not None:
            exit_status = self._view.status
            label = lines_label(self._view.output) if self._view.output.strip() else "no output"
            style = "$text-error" if self._view.failed else style
        elif self.status == "done" and self.result_text is not None:
            label = lines_label(self.result_text) if self.result_text else "no output"
        parts: list[str | tuple[str, str]] = [(glyph + " ", style), (one_line(self.tool_name), "bold")]
        if exit_status:
            # Before the command: a long command line is cut at the right edge, the exit code never.
            parts.append(("  " + exit_status, style))
        if self.args_line:
            parts.append(("  " + self.args_line, "$foreground-muted"))
        if label:
            parts.append(("  " + label, style))
        if self.hook_s > 0:
            parts.append((f"  hooks {_seconds(self.hook_s)}", "$foreground-muted"))
        if self.hook_failed:
            parts.append((f" ({self.hook_failed} failed)", "$text-error"))
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

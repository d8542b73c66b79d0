"""The dialogs' shared frame: the CSS of a centred dialog over a dimmed screen, and the bounded
preview every dialog (and the pending screen) shows a diff, a command or a text in.

What the model or a cloned repository wrote is shown stripped of terminal escapes, and a
preview is bounded (lines, line length) so that a huge file write cannot stall a dialog.
"""

from __future__ import annotations

from textual.content import Content

from memory.text.terminal import strip_terminal

__all__ = ["DIALOG_CSS", "PREVIEW_MAX_LINES", "PREVIEW_MAX_LINE_CHARS", "diff_style", "render_preview"]

PREVIEW_MAX_LINES = 400
PREVIEW_MAX_LINE_CHARS = 400


def diff_style(line: str) -> str:
    """The style of one line of a unified diff: its file names, an added, a removed line, a hunk."""
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "$text-success"
    if line.startswith("-"):
        return "$text-error"
    if line.startswith("@@"):
        return "$text-accent"
    return ""


def render_preview(preview: str, kind: str) -> Content:
    """The preview as shown: a diff coloured by line, a command after ``$``, text as is;
    bounded so a huge file write cannot stall the modal."""
    lines = strip_terminal(preview).expandtabs(4).split("\n")
    hidden = max(len(lines) - PREVIEW_MAX_LINES, 0)
    lines = [
        line if len(line) <= PREVIEW_MAX_LINE_CHARS else line[: PREVIEW_MAX_LINE_CHARS - 1] + "…"
        for line in lines[:PREVIEW_MAX_LINES]
    ]
    parts: list[str | tuple[str, str]] = []
    for i, line in enumerate(lines):
        end = "\n" if i < len(lines) - 1 else ""
        if kind == "diff":
            parts.append((line + end, diff_style(line)))
        elif kind == "command":
            prefix = "$ " if i == 0 else "  "
            parts.append((prefix, "$foreground-muted"))
            parts.append((line + end, "bold"))
        else:
            parts.append(line + end)
    if hidden:
        parts.append(
            (f"\n… {hidden} more line{'s' if hidden != 1 else ''} not shown", "italic $foreground-muted")
        )
    return Content.assemble(*parts)


# The frame of a dialog: a bordered box in the middle, a summary, a scrolling preview, the keys.
DIALOG_CSS = """
    align: center middle;
    background: $background 60%;
    & > #dialog {
        width: 90%;
        max-width: 110;
        height: auto;
        max-height: 95%;
        padding: 0 1;
        border: round $primary;
        border-title-style: bold;
        background: $surface;
    }
    #summary {
        margin: 0 0 1 0;
    }
    #preview {
        height: auto;
        max-height: 60vh;
        border: solid $foreground 20%;
        background: $background;
        padding: 0 1;
        scrollbar-size-vertical: 1;
        &:focus {
            border: solid $foreground 40%;
        }
    }
    #typed-ahead {
        display: none;
        height: auto;
        margin: 1 0 0 0;
    }
    #keys {
        height: auto;
        margin: 1 0 0 0;
    }
    #keys > Button {
        margin: 0 2 0 0;
    }
"""

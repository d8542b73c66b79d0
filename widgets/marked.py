"""A card's raw text as the model reads it, with what a rendered view would hide made visible.

Wherever a person reviews a card before trusting or approving it (the trust window, the card
browser's preview, the pending screen's changes), its text is shown raw and each fragment that
``memory.text.markup`` finds is marked: an HTML comment, a hiding element, a tag or a link
definition is highlighted after a label naming it; invisible characters are shown by name
(``⟨ZWSP⟩``) and an escape sequence as ``⟨escape sequence⟩`` (never its payload). The rest is
plain text through ``strip_terminal``; nothing is parsed as markup.
"""

from __future__ import annotations

from textual.content import Content

from memory.text.markup import ESCAPE, INVISIBLE, KIND_LABELS, Fragment, find_markup, reveal
from memory.text.terminal import strip_terminal
from widgets.dialogs.frame import PREVIEW_MAX_LINE_CHARS, PREVIEW_MAX_LINES, diff_style

__all__ = ["LABEL_STYLE", "MARK_STYLE", "marked", "marked_preview", "markup_counts"]

# A marked fragment, and the label before it / an invisible character's name.
MARK_STYLE = "$text-warning on $warning-muted"
LABEL_STYLE = "bold reverse $text-warning"

Piece = tuple[str, str]


def _join(base: str, style: str) -> str:
    return f"{base} {style}" if base else style


def _fragment_pieces(text: str, fragment: Fragment, base: str) -> list[Piece]:
    raw = text[fragment.start : fragment.end]
    label = _join(base, LABEL_STYLE)
    if fragment.kind == ESCAPE:
        return [("⟨escape sequence⟩", label)]
    if fragment.kind == INVISIBLE:
        return [(name, label) for name, _ in reveal(raw)]
    mark = _join(base, MARK_STYLE)
    pieces: list[Piece] = [(f"⚠ {KIND_LABELS[fragment.kind]}", label), (" ", base)]
    for piece, named in reveal(raw):
        pieces.append((piece, label) if named else (strip_terminal(piece), mark))
    return pieces


def _pieces(text: str, base: str = "") -> list[Piece]:
    pieces: list[Piece] = []
    pos = 0
    for fragment in find_markup(text):
        if fragment.start > pos:
            pieces.append((strip_terminal(text[pos : fragment.start]), base))
        pieces.extend(_fragment_pieces(text, fragment, base))
        pos = fragment.end
    if pos < len(text):
        pieces.append((strip_terminal(text[pos:]), base))
    return [p for p in pieces if p[0]]


def marked(text: str, style: str = "") -> Content:
    """``text`` raw (line breaks kept), in ``style``, its hidden markup made visible and marked."""
    pieces = _pieces(text, style)
    if len(pieces) == 1 and pieces[0][1] == style:
        return Content.styled(pieces[0][0], style) if style else Content(pieces[0][0])
    return Content.assemble(*pieces)


def markup_counts(text: str) -> str:
    """What ``text`` holds that a rendered view hides, in words ("1 HTML comment, 2 tags"), or ""."""
    counts: dict[str, int] = {}
    for fragment in find_markup(text):
        # Invisible characters by the character (a run of them is one fragment).
        n = fragment.end - fragment.start if fragment.kind == INVISIBLE else 1
        counts[fragment.kind] = counts.get(fragment.kind, 0) + n
    return ", ".join(f"{n:,} {KIND_LABELS[kind]}{'s' if n != 1 else ''}" for kind, n in counts.items())


def _lines(pieces: list[Piece]) -> list[list[Piece]]:
    lines: list[list[Piece]] = [[]]
    for text, style in pieces:
        first, *rest = text.split("\n")
        if first:
            lines[-1].append((first, style))
        for part in rest:
            lines.append([(part, style)] if part else [])
    return lines


def _cut(line: list[Piece], limit: int) -> list[Piece]:
    """At most ``limit`` characters of a line, the last one "…" when it was longer."""
    if sum(len(text) for text, _ in line) <= limit:
        return line
    out: list[Piece] = []
    room = limit - 1
    for text, style in line:
        if room <= 0:
            break
        out.append((text[:room], style))
        room -= len(out[-1][0])
    out.append(("…", ""))
    return out


def marked_preview(text: str, kind: str = "text") -> Content:
    """``widgets.dialogs.frame.render_preview`` of a card's text (``kind`` "text" or "diff", a
    diff coloured by line), its hidden markup made visible and marked; bounded alike."""
    lines = _lines(_pieces(text.expandtabs(4)))
    hidden = max(len(lines) - PREVIEW_MAX_LINES, 0)
    parts: list[Piece] = []
    for i, line in enumerate(lines[:PREVIEW_MAX_LINES]):
        if i:
            parts.append(("\n", ""))
        shown = _cut(line, PREVIEW_MAX_LINE_CHARS)
        base = diff_style("".join(t for t, _ in shown)) if kind == "diff" else ""
        parts.extend((t, _join(base, s) if s else base) for t, s in shown)
    if hidden:
        parts.append(
            (f"\n… {hidden} more line{'s' if hidden != 1 else ''} not shown", "italic $foreground-muted")
        )
    return Content.assemble(*parts)

"""What the card browser's preview shows above and as the body of the selected card: its fields,
its use, its citations with their states (DESIGN §14), and the body cut to a bounded size.

Card text comes from repositories anyone could write: every string passes through ``one_line``
or ``strip_terminal`` and is drawn as plain text (``Content`` spans, never markup).
"""

from __future__ import annotations

from textual.content import Content

from memory.text.lines import format_bytes, one_line
from memory.text.terminal import strip_terminal
from widgets.cards.card_list import CardRow, card_date

__all__ = ["FRESH_TEXT", "PREVIEW_MAX_BYTES", "UNTRUSTED_NOTE", "preview_body", "preview_meta"]

UNTRUSTED_NOTE = "untrusted — not used until you trust the project store"
FRESH_TEXT = "unchanged"
# Past this a body is cut: the Markdown widget mounts a block per paragraph, and a huge card
# would stall the screen for what nobody reads in a preview.
PREVIEW_MAX_BYTES = 64 * 1024
MAX_CITES_SHOWN = 20  # a hand-grown card may cite hundreds: the rest are counted

Part = str | tuple[str, str]


def preview_meta(row: CardRow) -> Content:
    title = one_line(row.title) or one_line(row.filename)
    parts: list[Part] = [
        (title, "bold"),
        ("\n" + " · ".join([one_line(row.level), one_line(row.type) or "no type", one_line(row.filename)]),
         "$foreground-muted"),
        (f"\nupdated {card_date(row.updated)} · source {one_line(row.source)}", "$foreground-muted"),
    ]
    if row.use:
        parts.append((f"\n{one_line(row.use)}", "$foreground-muted"))
    summary = one_line(row.summary)
    if summary:
        parts.append("\n" + summary)
    if row.untrusted:
        parts.append(("\n" + UNTRUSTED_NOTE, "bold $text-warning"))
    if row.broken is not None:
        parts.append(("\nbroken: " + one_line(row.broken), "bold $text-error"))
    parts.extend(_cite_parts(row))
    return Content.assemble(*parts)


def _cite_parts(row: CardRow) -> list[Part]:
    """"stale: <reason>", then one line per citation: "• path[:lines]: unchanged" or its reason."""
    if not row.cites:
        return []
    parts: list[Part] = []
    if row.stale is not None:
        parts.append(("\nstale: " + (one_line(row.stale) or "a cited file changed"), "bold $text-warning"))
    parts.append(("\nCites (checked when listed):", "$foreground-muted"))
    for cite in row.cites[:MAX_CITES_SHOWN]:
        parts.append(f"\n• {one_line(cite.spec, 200)}: ")
        if cite.state == "fresh":
            parts.append((FRESH_TEXT, "$text-success"))
        else:
            parts.append((one_line(cite.reason) or cite.state or "not checked", "$text-warning"))
    hidden = len(row.cites) - MAX_CITES_SHOWN
    if hidden > 0:
        parts.append((f"\n+{hidden} more", "$foreground-muted"))
    return parts


def preview_body(body: str) -> str:
    data = body.encode("utf-8", "surrogatepass")
    cut = len(data) > PREVIEW_MAX_BYTES
    if cut:
        body = data[:PREVIEW_MAX_BYTES].decode("utf-8", "ignore")
    text = strip_terminal(body, keep_newlines=True)
    if cut:
        text += f"\n\n*… cut: the body is {format_bytes(len(data))}, the preview shows the first 64 KiB*"
    return text

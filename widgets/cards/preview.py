"""What the card browser's preview shows above and as the body of the selected card: its fields,
its use, its citations with their states, and the body cut to a bounded size.

Card text comes from repositories anyone could write: every string passes through ``one_line``
or ``strip_terminal`` and is drawn as plain text (``Content`` spans, never markup). The body is
shown raw by default, its hidden markup marked (``widgets.marked``); rendered Markdown on request.
"""

from __future__ import annotations

from textual.content import Content

from memory.text.conflict_sides import SideName
from memory.text.lines import format_bytes, one_line
from memory.text.terminal import strip_terminal
from widgets.cards.card_list import CardRow, card_date, conflict_line
from widgets.cards.draft import ConflictSide
from widgets.marked import marked, markup_counts

__all__ = [
    "CONFLICT_HELP",
    "FRESH_TEXT",
    "PREVIEW_MAX_BYTES",
    "UNTRUSTED_NOTE",
    "preview_body",
    "preview_conflict",
    "preview_meta",
    "preview_raw",
    "preview_view_line",
]

UNTRUSTED_NOTE = "untrusted — not used until you trust the project store"
FRESH_TEXT = "unchanged"
# Past this a body is cut: the Markdown widget mounts a block per paragraph, and a huge card
# would stall the screen for what nobody reads in a preview.
PREVIEW_MAX_BYTES = 64 * 1024
CONFLICT_HELP = "In no prompt until it is resolved. Enter: take ours, take theirs, or edit the merge."
MAX_CITES_SHOWN = 20  # a hand-grown card may cite hundreds: the rest are counted

Part = str | tuple[str, str]


def preview_meta(row: CardRow) -> Content:
    title = one_line(row.title) or one_line(row.filename)
    parts: list[Part] = [
        (title, "bold"),
        (
            "\n" + " · ".join([one_line(row.level), one_line(row.type) or "no type", one_line(row.filename)]),
            "$foreground-muted",
        ),
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
    """ "stale: <reason>", then one line per citation: "• path[:lines]: unchanged" or its reason."""
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


def preview_raw(body: str) -> Content:
    """The body as the model reads it (``read_memory`` gives it raw), cut like ``preview_body``:
    what a rendered view would hide (comments, tags, invisible characters) shown and marked."""
    data = body.encode("utf-8", "surrogatepass")
    if len(data) <= PREVIEW_MAX_BYTES:
        return marked(body)
    return Content.assemble(
        marked(data[:PREVIEW_MAX_BYTES].decode("utf-8", "ignore")),
        (
            f"\n\n… cut: the body is {format_bytes(len(data))}, the preview shows the first 64 KiB",
            "italic $foreground-muted",
        ),
    )


def preview_view_line(body: str, *, raw: bool) -> Content:
    """Under the card's fields: which view of the body is shown (``v`` switches), and what the
    model reads that a rendered view hides."""
    hides = markup_counts(body)
    if raw:
        parts: list[Part] = [
            ("\nraw text, as the model reads it · v: rendered Markdown", "$foreground-muted")
        ]
        if hides:
            parts.append((f"\n⚠ hidden when rendered: {hides} (marked below)", "bold $text-warning"))
    else:
        parts = [("\nrendered Markdown · v: the raw text the model reads", "$foreground-muted")]
        if hides:
            parts.append(
                (f"\n⚠ this view hides what the model reads: {hides} (v shows it)", "bold $text-warning")
            )
    return Content.assemble(*parts)


def _side_parts(name: SideName, side: ConflictSide) -> list[Part]:
    """One version of a conflicted card: a rule with its name and git's label, its fields, its body."""
    label = f"{name.name} · {one_line(name.detail, 60)}" if name.detail else name.name
    draft = side.draft
    parts: list[Part] = [(f"\n\n── {label} ──", "bold $text-accent")]
    if side.problem:
        parts.append(
            (
                f"\nits front matter does not parse ({one_line(side.problem, 120)}): "
                "offered as body text only",
                "$text-warning",
            )
        )
    else:
        parts.append(("\ntitle    ", "$foreground-muted"))
        parts.append((one_line(draft.title), "bold"))
        for field, value in (
            ("summary  ", draft.summary),
            ("type     ", draft.type),
            ("cites    ", ", ".join(draft.cites)),
            ("pinned   ", "yes" if draft.pinned else ""),
        ):
            if value:
                parts += [(f"\n{field}", "$foreground-muted"), one_line(value)]
    parts.append("\n" + preview_body(draft.body).rstrip("\n"))
    return parts


def preview_conflict(row: CardRow) -> Content:
    """A conflicted card: what it is, how to resolve it, then both versions whole
    (each body cut like a preview's), as plain sanitized text: a card's Markdown could not
    blur where one version ends."""
    conflict = row.conflict
    title = one_line(row.title) or one_line(row.filename)
    parts: list[Part] = [
        (title, "bold"),
        ("\n" + " · ".join([one_line(row.level), "conflicted", one_line(row.filename)]), "$foreground-muted"),
        (
            "\nconflicted: "
            + (conflict_line(conflict) if conflict is not None else "changed on two branches"),
            "bold $text-error",
        ),
    ]
    if conflict is None:
        parts.append(("\n" + CONFLICT_HELP, "$text-warning"))
    else:
        first, second = conflict.names()
        parts.append(
            (
                f"\nIn no prompt until it is resolved. Enter: take {first.possessive}, take "
                f"{second.possessive}, or edit the merge.",
                "$text-warning",
            )
        )
        parts += _side_parts(first, conflict.ours)
        parts += _side_parts(second, conflict.theirs)
    return Content.assemble(*parts)

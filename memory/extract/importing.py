"""Cards out of other agents' instruction and memory files: the text side of ``memory import``.

Pure functions over text (reading the files is memory/jobs/importing.py's): an instruction
document (``CLAUDE.md``, ``AGENTS.md``, ``GEMINI.md``) becomes one card per section, a note of
a memory folder one card per file. The structure comes from markdown-it, so a ``#`` line inside
a code fence or an indented code block is never a heading, and a body keeps its lists and fences
exactly as written. Each card says where it came from (``import:<file>#<section>``) and is typed
by ``card_type``'s rule, which the README states.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from memory.constants import MAX_CONTENT_BYTES, MAX_SUMMARY, NoteType
from memory.text.lines import format_bytes
from memory.text.names import sanitize_line
from memory.text.redact import redact
from memory.text.terminal import strip_terminal

__all__ = [
    "IMPORT_PREFIX",
    "SECTION_BUDGET",
    "SourceCard",
    "bounded_body",
    "card_type",
    "document_cards",
    "drop_index_links",
    "front_type",
    "normalize_text",
    "note_card",
    "split_front_matter",
    "written_text",
]

IMPORT_PREFIX = "import:"
# A card's body is at most this many UTF-8 bytes, measured once it is redacted: the op limit less
# room for the cut note.
SECTION_BUDGET = MAX_CONTENT_BYTES - 1024
_MAX_FRONT_MATTER = 64 * 1024
_MAX_FRAGMENT = 80
_MAX_PROVENANCE = 300


@dataclass(frozen=True)
class SourceCard:
    """One card an import would make, before the store's validation: title, summary, type and
    body as the card will hold them (``written_text``: no escape, secrets redacted), and where it
    came from (``origin``: the file as shown; ``section``: its heading, "" for a whole file or the
    text before the first heading)."""

    title: str
    summary: str
    type: NoteType
    body: str
    origin: str
    section: str = ""
    cut: bool = False
    # Its source held terminal escape sequences, control or invisible characters, removed.
    stripped: bool = False

    @property
    def provenance(self) -> str:
        """``import:CLAUDE.md#Style``: one redacted line, the card's ``source``."""
        where = f"{self.origin}#{self.section}" if self.section else self.origin
        return sanitize_line(redact(IMPORT_PREFIX + where), _MAX_PROVENANCE)


# -- the type rule ---------------------------------------------------------------------------

# Checked in this order against a heading's (or a note's title's) words; the first that matches
# wins, so "Code style preferences" is a convention and "Docs to avoid" a correction.
_TYPE_RULES: tuple[tuple[re.Pattern[str], NoteType], ...] = (
    (
        re.compile(
            r"\b(don'?t|do not|never|avoid|gotchas?|pitfalls?|mistakes?|lessons?( learned)?|corrections?|"
            r"feedback|caveats?|warnings?|known issues?|failures?|anti-?patterns?)\b"
        ),
        NoteType.CORRECTION_FEEDBACK,
    ),
    (
        re.compile(
            r"\b(references?|docs|documentation|links?|resources|see also|further reading|bibliography)\b"
        ),
        NoteType.REFERENCE_MATERIAL,
    ),
    (
        re.compile(r"\b(style|conventions?|formatting|naming|lint(ing)?|guidelines?|standards?)\b"),
        NoteType.PROJECT_KNOWLEDGE,
    ),
    (
        re.compile(r"\b(preferences?|prefer(red|s)?|personal|about me|communication|tone)\b"),
        NoteType.USER_PREFERENCE,
    ),
)
_LINK_LINE = re.compile(r"\]\([^)\s]+\)|<https?://|https?://\S")
_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")


def card_type(heading: str, body: str) -> NoteType:
    """The card type of a section: by its heading's words (``_TYPE_RULES``), else reference
    material when most of its lines are links, else project knowledge."""
    words = heading.casefold()
    for pattern, note_type in _TYPE_RULES:
        if pattern.search(words):
            return note_type
    lines = [ln for ln in body.splitlines() if ln.strip() and not _FENCE_LINE.match(ln)]
    links = sum(1 for ln in lines if _LINK_LINE.search(ln))
    if links >= 2 and links * 10 >= len(lines) * 6:
        return NoteType.REFERENCE_MATERIAL
    return NoteType.PROJECT_KNOWLEDGE


# The ``type`` a memory note's front matter gives (Claude Code's ``user``/``feedback``/``project``/
# ``reference``, or this app's own names) -> the card type.
_FRONT_TYPES: Mapping[str, NoteType] = {
    "user": NoteType.USER_PREFERENCE,
    "preference": NoteType.USER_PREFERENCE,
    "feedback": NoteType.CORRECTION_FEEDBACK,
    "correction": NoteType.CORRECTION_FEEDBACK,
    "project": NoteType.PROJECT_KNOWLEDGE,
    "reference": NoteType.REFERENCE_MATERIAL,
    **{t.value: t for t in NoteType},
}


def front_type(meta: Mapping[str, Any]) -> NoteType | None:
    """The type a front matter names (``type``, or ``metadata.type``), None when it names none we know."""
    nested = meta.get("metadata")
    for raw in (meta.get("type"), nested.get("type") if isinstance(nested, dict) else None):
        if isinstance(raw, str) and raw.strip().casefold() in _FRONT_TYPES:
            return _FRONT_TYPES[raw.strip().casefold()]
    return None


# -- text, front matter, bounds ----------------------------------------------------------------


def normalize_text(text: str) -> str:
    """One line ending (``\\n``) and no byte-order mark: line numbers then mean the same to
    markdown-it and to the slicing here."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, the rest) of a normalized text. A block that is not a YAML mapping (a
    horizontal rule, prose between two rules) is no front matter: ``({}, text)``."""
    if not text.startswith("---\n"):
        return {}, text
    end = -1
    for m in re.finditer(r"^(?:---|\.\.\.)[ \t]*$", text, re.MULTILINE):
        if m.start() > 0:
            end = m.start()
            break
    if end < 0 or end > _MAX_FRONT_MATTER:
        return {}, text
    try:
        data = yaml.safe_load(text[4:end])
    except yaml.YAMLError:
        return {}, text
    if not isinstance(data, dict):
        return {}, text
    rest = text[end:].split("\n", 1)
    return data, rest[1] if len(rest) > 1 else ""


def _open_fence(text: str) -> str | None:
    """The marker of a code fence ``text`` leaves open at its end, None when every fence closes."""
    marker: str | None = None
    for line in text.split("\n"):
        m = _FENCE_LINE.match(line)
        if m is None:
            continue
        run = m.group(1)
        if marker is None:
            marker = run
        elif run[0] == marker[0] and len(run) >= len(marker) and not line[m.end() :].strip():
            marker = None
    return marker


def bounded_body(body: str, origin: str) -> tuple[str, bool]:
    """``body`` cut at a line end within ``SECTION_BUDGET`` bytes, a fence it leaves open closed,
    and one line saying how much is left in ``origin``; True when cut."""
    data = body.encode("utf-8", "surrogatepass")
    if len(data) <= SECTION_BUDGET:
        return body, False
    head = data[:SECTION_BUDGET].decode("utf-8", "ignore")
    nl = head.rfind("\n")
    head = head[:nl] if nl > 0 else head
    left = len(data) - len(head.encode("utf-8", "surrogatepass"))
    fence = _open_fence(head)
    if fence is not None:
        head += "\n" + fence
    note = f"[cut on import: {format_bytes(left)} more of this section is in {sanitize_line(origin, 200)}]"
    return f"{head.rstrip()}\n\n{note}\n", True


# -- Markdown structure -------------------------------------------------------------------------


@cache
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


@dataclass(frozen=True)
class _Heading:
    level: int
    start: int  # first line of the heading (0-based)
    end: int  # first line after it (a setext heading has two)
    text: str


def _plain(inline: Token) -> str:
    """An inline token's text without its markup: ``**Code** `style``` -> ``Code style``."""
    parts: list[str] = []
    for child in inline.children or ():
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_plain(child))
    return " ".join("".join(parts).split())


def _headings(tokens: Sequence[Token]) -> list[_Heading]:
    """The document's own headings: none from a fence, a code block, a quote or a list item."""
    out: list[_Heading] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map is not None:
            out.append(_Heading(int(tok.tag[1:]), tok.map[0], tok.map[1], _plain(tokens[i + 1])))
    return out


def _summary(body: str) -> str:
    """The first paragraph's text (a list item's counts; a fence's never), one line, cut at a word."""
    tokens = _markdown().parse(body)
    for prev, tok in itertools.pairwise(tokens):
        if tok.type == "inline" and prev.type == "paragraph_open":
            text = sanitize_line(_plain(tok), 10 * MAX_SUMMARY)
            if len(text) > MAX_SUMMARY:
                text = text[: MAX_SUMMARY - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"
            return text
    return ""


def _section_level(headings: Sequence[_Heading]) -> int:
    """The level a document is cut at: the highest one used more than once (a lone ``#`` title
    above ``##`` sections is not the cut), else the highest used."""
    levels = [h.level for h in headings]
    repeated = [lv for lv in set(levels) if levels.count(lv) > 1]
    return min(repeated) if repeated else min(levels)


def written_text(text: str) -> str:
    """Source text as a card holds it: terminal escape sequences (an OSC 52 clipboard write, a
    title, a screen clear) and control or invisible characters removed, as any text shown on a
    terminal is (``strip_terminal``), then secrets redacted as every write redacts them. Done
    once, when a card is made: every preview, the held job and the written card show this."""
    return redact(strip_terminal(text))


def _card(
    title: str, body: str, origin: str, section: str, note_type: NoteType | None = None, summary: str = ""
) -> SourceCard | None:
    body = body.strip("\n")
    clean = written_text(body)
    if not clean.strip():
        return None  # an empty section says nothing
    stripped = strip_terminal(body) != body
    clean, cut = bounded_body(clean + "\n", origin)
    title, summary = written_text(title), written_text(summary or _summary(clean))
    return SourceCard(
        title=title,
        summary=summary,
        type=note_type or card_type(title, clean),
        body=clean,
        origin=origin,
        section=section,
        cut=cut,
        stripped=stripped,
    )


def document_cards(text: str, origin: str, *, title: str) -> list[SourceCard]:
    """An instruction document as cards, one per section: a heading at the section level (or
    above it) and the lines up to the next such heading. Text before the first one is a card
    titled ``title``; a document without headings is that one card. Empty sections are skipped,
    a section over ``SECTION_BUDGET`` is cut with a note."""
    meta, text = split_front_matter(normalize_text(text))
    title = _meta_text(meta, "title") or title
    lines = text.split("\n")
    heads = _headings(_markdown().parse(text))
    if not heads:
        card = _card(title, text, origin, "", front_type(meta), _meta_text(meta, "description"))
        return [card] if card else []
    cut_level = _section_level(heads)
    bounds = [h for h in heads if h.level <= cut_level]
    cards: list[SourceCard | None] = [_card(title, "\n".join(lines[: bounds[0].start]), origin, "")]
    seen: dict[str, int] = {}
    for i, head in enumerate(bounds):
        stop = bounds[i + 1].start if i + 1 < len(bounds) else len(lines)
        name = sanitize_line(head.text, _MAX_FRAGMENT) or f"section {i + 1}"
        seen[name] = seen.get(name, 0) + 1
        fragment = name if seen[name] == 1 else f"{name} ({seen[name]})"
        cards.append(_card(name, "\n".join(lines[head.end : stop]), origin, fragment))
    return [c for c in cards if c is not None]


def note_card(text: str, origin: str, *, stem: str) -> SourceCard | None:
    """A memory note as one card: its front matter's ``title``/``name``, ``description`` and
    ``type`` (or ``metadata.type``) when it has them; else a leading heading is its title, else
    the file's name. None when it has no body."""
    meta, body = split_front_matter(normalize_text(text))
    title = _meta_text(meta, "title") or _meta_text(meta, "name")
    if not title:
        heads = _headings(_markdown().parse(body))
        lines = body.split("\n")
        if heads and not "\n".join(lines[: heads[0].start]).strip():
            title = heads[0].text
            body = "\n".join(lines[heads[0].end :])
    title = title or " ".join(re.split(r"[_\-\s]+", stem)).strip() or stem
    return _card(
        title,
        body,
        origin,
        "",
        front_type(meta),
        _meta_text(meta, "description") or _meta_text(meta, "summary"),
    )


def _meta_text(meta: Mapping[str, Any], key: str) -> str:
    value = meta.get(key)
    return sanitize_line(value, 1000) if isinstance(value, str) else ""


# A list item that only points at another note of the folder: ``- [Testing](feedback_testing.md) — …``.
_INDEX_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+.*?\[[^\]]*\]\(\s*<?(?:\./)?([^)\s>]+)>?\s*\)")


def drop_index_links(text: str, names: Sequence[str]) -> str:
    """A folder's index (Claude Code's ``MEMORY.md``) without its lines that point at the
    folder's own notes (imported from the notes themselves); what else it says is kept."""
    wanted = {n.casefold() for n in names}
    kept = []
    for line in normalize_text(text).split("\n"):
        m = _INDEX_ITEM.match(line)
        if m is not None and m.group(1).casefold() in wanted:
            continue
        kept.append(line)
    return "\n".join(kept)

"""Text a card's reader may not see but the model reads: where it is in a raw text, and what it is.

A card's body reaches the model raw (``read_memory``), while a rendered Markdown view drops HTML
comments, tags, link definitions and whatever a tag hides, and a terminal shows no zero-width or
bidi character and no escape sequence. ``find_markup`` says where such text is (its kind and
span), ``has_markup`` whether there is any, ``reveal`` turns the characters nobody can see into
visible names, and ``excerpt`` gives one fragment as one bounded, printable line. One
precompiled regex over the text: cheap enough for ten thousand cards. Nothing here touches the
disk or draws anything.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import NamedTuple

from memory.text.terminal import ESCAPE_SEQUENCE_RE, strip_terminal

__all__ = [
    "COMMENT",
    "ESCAPE",
    "HIDDEN",
    "INVISIBLE",
    "KIND_LABELS",
    "LINK_DEFINITION",
    "TAG",
    "Fragment",
    "card_markup",
    "excerpt",
    "find_markup",
    "first_markup",
    "has_markup",
    "reveal",
    "visible_name",
]

COMMENT = "comment"  # <!-- … -->, or <!-- to the end of the text (Markdown hides all of it)
HIDDEN = "hidden"  # an element that hides its content (display:none, hidden, <details>…), to its end tag
TAG = "tag"  # any other tag or tag-like text: <div>, </system>, <memory-index>, <|im_start|>, <?…?>
LINK_DEFINITION = "link definition"  # [x]: target — a line the rendered view never shows
INVISIBLE = "invisible"  # zero-width, bidi, other format and control characters
ESCAPE = "escape"  # a terminal escape sequence: never shown (not even its payload), read by the model

KIND_LABELS: dict[str, str] = {
    COMMENT: "HTML comment",
    HIDDEN: "hidden element",
    TAG: "tag",
    LINK_DEFINITION: "link definition",
    INVISIBLE: "invisible character",
    ESCAPE: "terminal escape",
}


class Fragment(NamedTuple):
    """``text[start:end]`` is text of this kind (one of ``KIND_LABELS``)."""

    kind: str
    start: int
    end: int


# Characters a terminal shows as nothing: controls but tab and line breaks, every format (Cf)
# character of Unicode 15 (bidi controls, zero-width ones, tag characters: ASCII smuggled
# invisibly), lone surrogates, and the usual invisible fillers (CGJ, Hangul fillers, the
# supplementary variation selectors). Listed, not looked up per character: one regex class.
_HARD = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u180e"
    "\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\ud800-\udfff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef"
)
# Joiners and variation selectors that scripts and emoji need (क्‍ष, 👨‍👩‍👧, ❤️): counted only
# where no script or emoji needs them (after ASCII, a joiner before ASCII, more than three in a row).
_SOFT = "\u200c\u200d\ufe00-\ufe0f"
_SOFT_MAX = 3

# An attribute list that stops at the next "<": a tag left open costs a scan to the next tag only.
_TAG_REST = r"""(?:\s(?:[^<>"']|"[^"<]*"|'[^'<]*')*)?/?>"""
_TAG_NAME = r"[A-Za-z][A-Za-z0-9:_.-]*"
# Elements whose content is not shown, or only after a click.
_HIDING_ELEMENTS = frozenset({"script", "style", "template", "details", "noscript"})
# Elements without content: one that hides is just its tag.
_VOID_ELEMENTS = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)


class _Patterns:
    """The scanner's regexes, compiled at first use: importing this module (the App does, before
    its first frame) costs nothing, a first scan a few milliseconds."""

    def __init__(self) -> None:
        self.markup = re.compile(
            rf"(?P<escape>{ESCAPE_SEQUENCE_RE.pattern})"
            r"|(?P<comment><!--.*?(?:-->|\Z))"
            # CDATA, processing instructions, declarations, chat-template tokens: to their end or the text's.
            r"|(?P<special><!\[CDATA\[.*?(?:\]\]>|\Z)|<\?.*?(?:\?>|\Z)|<![A-Za-z][^<>]*>|<\|[^|<>\n]{1,64}\|>)"
            rf"|(?P<tag></?(?P<name>{_TAG_NAME}){_TAG_REST})"
            r"|(?P<linkdef>^ {0,3}\[(?!\^)[^\]\n]{1,999}\]:[ \t]*\S[^\n]*)"
            rf"|(?P<invisible>[{_HARD}{_SOFT}]+)",
            re.DOTALL | re.IGNORECASE | re.MULTILINE,
        )
        # Inside a hiding element: its nested tags of the same name and its comments (a "</div>" in a
        # comment ends nothing).
        self.nest = re.compile(rf"<!--.*?(?:-->|\Z)|<(/?)({_TAG_NAME}){_TAG_REST}", re.DOTALL | re.IGNORECASE)
        self.hiding = re.compile(
            r"display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)|(?:font-size|opacity|max-height|height)\s*:\s*0(?![.\d]*[1-9])"
            r"|\shidden(?=[\s/>=])",
            re.IGNORECASE,
        )
        self.hard = re.compile(f"[{_HARD}]")
        # Where a fragment can start: one character class, which the regex engine scans for in C (the
        # whole pattern tried at every character took ten times as long). A link definition starts at
        # its line's start, up to three spaces before its "[".
        self.start = re.compile(rf"[<\[{_HARD}{_SOFT}]")
        self.reveal = re.compile(
            rf"(?P<escape>{ESCAPE_SEQUENCE_RE.pattern})|(?P<invisible>[{_HARD}{_SOFT}]+)", re.DOTALL
        )


@functools.cache
def _patterns() -> _Patterns:
    return _Patterns()


_NAMES = {
    "\u00ad": "SHY",
    "\u034f": "CGJ",
    "\u061c": "ALM",
    "\u180e": "MVS",
    "\u200b": "ZWSP",
    "\u200c": "ZWNJ",
    "\u200d": "ZWJ",
    "\u200e": "LRM",
    "\u200f": "RLM",
    "\u202a": "LRE",
    "\u202b": "RLE",
    "\u202c": "PDF",
    "\u202d": "LRO",
    "\u202e": "RLO",
    "\u2060": "WJ",
    "\u2066": "LRI",
    "\u2067": "RLI",
    "\u2068": "FSI",
    "\u2069": "PDI",
    "\ufeff": "BOM",
    "\x00": "NUL",
    "\x7f": "DEL",
}


def _soft_only_needed(text: str, start: int, end: int) -> bool:
    """Whether a run of joiners / variation selectors alone sits where a script or an emoji
    needs it: short, after a character that is not ASCII (or a keycap's digit), and for a joiner
    before one too."""
    if end - start > _SOFT_MAX or start == 0 or _patterns().hard.search(text, start, end):
        return False
    before, after = text[start - 1], text[end] if end < len(text) else ""
    if after == "\u20e3":
        return True  # a keycap: 1️⃣
    if before <= "\x7f" or before.isspace():
        return False
    if "\u200c" in text[start:end] or "\u200d" in text[start:end]:
        return after > "\x7f" and not after.isspace()
    return True


def _hiding_end(text: str, m: re.Match[str]) -> int | None:
    """Where the element an opening tag starts ends, when that element hides what it holds
    (its end tag's end, or the text's end when it has none); None for any other tag."""
    tag = m.group("tag")
    if tag.startswith("</") or tag.endswith("/>"):
        return None
    name = m.group("name").lower()
    if name not in _HIDING_ELEMENTS and not _patterns().hiding.search(tag):
        return None
    if name in _VOID_ELEMENTS:
        return m.end()
    depth = 1
    for inner in _patterns().nest.finditer(text, m.end()):
        found = inner.group(2)
        if found is None or found.lower() != name or inner.group(0).endswith("/>"):
            continue  # a comment, another element, a self-closed one
        depth += -1 if inner.group(1) else 1
        if depth == 0:
            return inner.end()
    return len(text)


def _fragments(text: str, limit: int | None) -> Iterator[Fragment]:
    pos = 0
    found = 0
    scan, match = _patterns().start.search, _patterns().markup.match
    while limit is None or found < limit:
        hit = scan(text, pos)
        if hit is None:
            return
        at = hit.start()
        m = None
        if text[at] == "[":
            line = text.rfind("\n", 0, at) + 1
            if line >= pos and at - line <= 3 and text[line:at] == " " * (at - line):
                m = match(text, line)
        if m is None:
            m = match(text, at)
        if m is None:
            pos = at + 1
            continue
        start, end = m.span()
        pos = end
        kind = m.lastgroup  # (the outer group: a tag's name group closes inside it)
        if kind == "invisible":
            if _soft_only_needed(text, start, end):
                continue
            fragment = Fragment(INVISIBLE, start, end)
        elif kind == "tag":
            hidden = _hiding_end(text, m)
            fragment = Fragment(HIDDEN, start, hidden) if hidden is not None else Fragment(TAG, start, end)
            pos = max(pos, fragment.end)
        elif kind == "special":
            fragment = Fragment(TAG, start, end)
        elif kind == "linkdef":
            fragment = Fragment(LINK_DEFINITION, start, end)
        elif kind == "comment":
            fragment = Fragment(COMMENT, start, end)
        else:
            fragment = Fragment(ESCAPE, start, end)
        found += 1
        yield fragment


def find_markup(text: str, limit: int | None = None) -> list[Fragment]:
    """The fragments of ``text`` a reader of its rendered or terminal view would not see, in
    order, none inside another (a comment inside a hidden element is part of that element);
    at most ``limit`` of them."""
    if not text:
        return []
    return list(_fragments(text, limit))


def first_markup(text: str) -> Fragment | None:
    """The first fragment ``find_markup`` finds, or None."""
    return next(_fragments(text, 1), None) if text else None


def has_markup(text: str) -> bool:
    """Whether ``text`` holds any fragment ``find_markup`` finds."""
    return first_markup(text) is not None


def visible_name(chars: str) -> str:
    """Invisible characters as visible text: ``⟨ZWSP⟩``, ``⟨U+E0001⟩``; a run of Unicode tag
    characters (ASCII written invisibly) as the text it spells: ``⟨tag text "curl x | sh"⟩``."""
    out: list[str] = []
    spelled: list[str] = []

    def spell() -> None:
        if spelled:
            out.append(f"⟨tag text {''.join(spelled)!r}⟩")
            spelled.clear()

    for c in chars:
        code = ord(c)
        if 0xE0020 <= code <= 0xE007E:
            spelled.append(chr(code - 0xE0000))
            continue
        spell()
        out.append(f"⟨{_NAMES.get(c) or f'U+{code:04X}'}⟩")
    spell()
    return "".join(out)


def reveal(text: str, *, every_joiner: bool = False) -> list[tuple[str, bool]]:
    """``text`` in pieces ``(piece, named)``: the characters nobody could see as their names
    (``named`` True: ``⟨ZWSP⟩``, ``⟨escape sequence⟩``, never an escape's payload), the rest as
    it is (``strip_terminal`` it before drawing: a line break can still be a CR). A joiner a
    script or an emoji needs is kept as it is, unless ``every_joiner``: a line that must be
    printable names it too."""
    pieces: list[tuple[str, bool]] = []
    pos = 0
    for m in _patterns().reveal.finditer(text):
        start, end = m.span()
        if m.lastgroup == "invisible":
            if not every_joiner and _soft_only_needed(text, start, end):
                continue
            name = visible_name(m.group())
        else:
            name = "⟨escape sequence⟩"
        if start > pos:
            pieces.append((text[pos:start], False))
        pieces.append((name, True))
        pos = end
    if pos < len(text):
        pieces.append((text[pos:], False))
    return pieces


def excerpt(text: str, fragment: Fragment, width: int = 120) -> str:
    """One fragment of ``text`` as one printable line of at most ``width`` characters: its raw
    text, invisible characters named, whitespace runs one space, cut with "…"."""
    raw = text[fragment.start : min(fragment.end, fragment.start + 4 * width)]
    shown = "".join(
        piece if named else strip_terminal(piece, keep_newlines=False)
        for piece, named in reveal(raw, every_joiner=True)
    )
    line = " ".join(shown.split())
    if len(line) > width or fragment.end > fragment.start + 4 * width:
        line = line[: max(width - 1, 0)].rstrip() + "…"
    return line


def card_markup(body: str, *fields: str) -> tuple[str, str] | None:
    """What a card hides from its reader, as the trust window and every review shows it: the
    first fragment of its body, else of its other ``fields`` (title, summary) in order, as
    (its kind's label, ``excerpt``); None when it hides nothing."""
    for text in (body, *fields):
        fragment = first_markup(text)
        if fragment is not None:
            return KIND_LABELS[fragment.kind], excerpt(text, fragment)
    return None

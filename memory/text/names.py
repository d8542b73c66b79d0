"""Names and one-line fields: what a model or a person may call a card, and how a value is quoted.

Titles and summaries are one line of plain text; a targeted filename is checked lexically; a
created note's name is ``<type>_<slug>.md`` from a slug that never carries a secret or an escape
sequence; ``quote`` renders a value inside a reason (redacted, one line, short); ``defuse_tags``
keeps untrusted text inside a prompt's delimiters. Nothing here touches the disk.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

from memory.constants import INDEX_FILE, MAX_SLUG, MAX_SUMMARY, MAX_TITLE, NoteType
from memory.text.redact import redact
from memory.text.terminal import is_strict_utf8, is_unsafe_char, strip_escape_sequences, strip_terminal

__all__ = [
    "check_filename",
    "defuse_tags",
    "note_filename",
    "quote",
    "sanitize_line",
    "sanitize_summary",
    "sanitize_title",
    "slugify",
]


def sanitize_line(s: str, max_chars: int) -> str:
    """One line of plain text: whitespace collapsed, invisible/control characters removed,
    no leading ``#`` (so it cannot become a Markdown header), at most ``max_chars`` code points.
    Escape sequences go first and whole, so no remnant such as ``[31m`` is left."""
    s = strip_escape_sequences(s)
    out: list[str] = []
    for c in s:
        if c.isspace():
            out.append(" ")
        elif not is_unsafe_char(c):
            out.append(c)
    text = re.sub(r" {2,}", " ", "".join(out)).lstrip("# ").strip()
    # rstrip again: cutting may leave a trailing space; the result stays idempotent.
    return text[: max(max_chars, 0)].rstrip()


def sanitize_title(s: str) -> str:
    return sanitize_line(s, MAX_TITLE)


def sanitize_summary(s: str) -> str:
    return sanitize_line(s, MAX_SUMMARY)


def defuse_tags(text: str, tags: Iterable[str]) -> str:
    """Escape ``<tag`` / ``</tag`` for the delimiters a prompt uses, so untrusted text inside
    them cannot close its block and pose as instructions (``</memory-index>`` -> ``&lt;/memory-index>``)."""
    names = "|".join(re.escape(t) for t in tags)
    if not names:
        return text
    return re.sub(rf"<(\s*/?\s*(?:{names}))(?![A-Za-z0-9_-])", r"&lt;\1", text, flags=re.IGNORECASE)


def quote(value: object, limit: int = 60) -> str:
    """A value for a rejection or conflict reason: redacted, stripped of control characters,
    shortened, then quoted. Reasons reach stderr, the history and the job, so they never carry
    a raw secret or escape sequence."""
    text = strip_terminal(redact(str(value)), keep_newlines=False)
    if len(text) > limit:
        text = text[: max(limit - 1, 1)] + "…"
    return repr(text)


# Names every test of check_filename passes: plain ASCII, no leading dot or dash, ".md" at the end.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,240}\.md")
_INDEX_FOLDED = INDEX_FILE.casefold()


def check_filename(name: str) -> str | None:
    """Why ``name`` cannot be a targeted note filename, or None. Lexical only: existence,
    symlinks and hard links are the store's checks."""
    if not isinstance(name, str):
        return "filename must be a string"
    if _PLAIN_NAME.fullmatch(name) and ".." not in name and name.casefold() != _INDEX_FOLDED:
        return None  # passes every test below, found in one (a new process lists 10,000 names)
    if name == "":
        return "filename is empty"
    if not is_strict_utf8(name):
        return "filename is not valid UTF-8 (lone surrogate)"
    if len(name.encode("utf-8")) > 255:
        return "filename is longer than 255 bytes"
    if "\x00" in name:
        return "filename contains a NUL character"
    if "/" in name or "\\" in name:
        return f"filename {quote(name)} contains a path separator"
    if name in (".", "..") or ".." in name:
        return f"filename {quote(name)} contains '..'"
    if any(is_unsafe_char(c) for c in name):
        return f"filename {quote(name)} contains control, bidi or invisible characters"
    if name != name.strip():
        return f"filename {quote(name)} has leading or trailing whitespace"
    if name.startswith("."):
        return f"filename {quote(name)} starts with a dot"
    if name.startswith("-"):
        return f"filename {quote(name)} starts with '-'"
    if unicodedata.normalize("NFKC", name).casefold() == INDEX_FILE.casefold():
        return f"{INDEX_FILE} is the index, not a note"
    if not name.endswith(".md"):
        return f"filename {quote(name)} does not end in .md"
    return None


def _slug_of(text: str) -> str:
    # Sequences go whole before anything else (no "31m" in a name); a secret never becomes a name.
    text = redact(strip_escape_sequences(text))
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:MAX_SLUG].rstrip("-")


def slugify(title: str, slug: str | None) -> str:
    """The slug part of a created note's name (``<type>_<slug>.md``): lowercase ASCII letters,
    digits and dashes, at most ``MAX_SLUG`` characters; never empty."""
    for source in (slug, title):
        if source:
            s = _slug_of(source)
            if s:
                return s
    digest = hashlib.sha256(title.encode("utf-8", "surrogatepass")).hexdigest()
    return f"note-{digest[:8]}"


def note_filename(type: NoteType | str, slug: str) -> str:
    return f"{NoteType(type).value}_{slug}.md"

"""A card file's bytes as a ``Note``: its front matter parsed and sanitized, a broken or
conflicted card still listed (flagged) so nothing is lost from view. Pure: no files, no caches
(memory/store/store.py reads the files and keeps what this returns)."""

from __future__ import annotations

import hashlib

from memory.constants import MAX_SUMMARY, MAX_TITLE, Level, NoteType
from memory.model import ConflictSides, Note, NoteMeta
from memory.store.conflict import split_conflict
from memory.store.frontmatter import FrontMatterError, parse_meta, split_note
from memory.text.names import quote, sanitize_summary, sanitize_title
from memory.text.terminal import BIDI, ZERO_WIDTH

__all__ = ["conflict_reason", "parse_note", "sha256"]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fallback_type(filename: str) -> NoteType:
    for t in NoteType:
        if filename.startswith(f"{t}_"):
            return t
    return NoteType.PROJECT_KNOWLEDGE


def conflict_reason(sides: ConflictSides) -> str:
    """Why a conflicted card is in no prompt, in one line (doctor, ``memory index``, the panel)."""
    where = " and ".join(quote(x, 40) for x in (sides.ours_label, sides.theirs_label) if x)
    return (
        f"conflicted: changed on two branches{f' ({where})' if where else ''}; "
        "resolve it in the card editor or with `memory apply` of an update"
    )


def parse_note(level: Level, filename: str, data: bytes) -> Note:
    """Parse a note file; a broken one still yields a Note (flagged) so nothing is lost from view."""
    digest = sha256(data)
    broken: str | None = None
    unparsed = False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        broken = "not valid UTF-8"
        unparsed = True
    sides = split_conflict(text) if "<<<<<<<" in text else None
    if sides is not None:
        return _conflicted_note(level, filename, text, digest, sides)
    fallback = _fallback_type(filename)
    try:
        fm, body = split_note(text)
        meta = parse_meta(fm, fallback_type=fallback)
        raw_type = fm.get("type")
        if str(raw_type if raw_type is not None else "").strip() not in _TYPE_VALUES:
            # Listed under a fallback type, but said: a silent replacement would hide the typo.
            what = "no type" if raw_type is None else f"unknown type {quote(raw_type)}"
            broken = broken or f"{what} in the front matter (listed as {fallback})"
    except FrontMatterError as e:
        broken = broken or str(e)
        unparsed = True
        body = text
        meta = NoteMeta(title=filename.removesuffix(".md"), type=fallback, created="", updated="")
    # Hand edits are not trusted to keep the index one line per note.
    title = meta.title if _is_sanitized(meta.title, MAX_TITLE) else sanitize_title(meta.title)
    summary = meta.summary if _is_sanitized(meta.summary, MAX_SUMMARY) else sanitize_summary(meta.summary)
    if title != meta.title or summary != meta.summary or not title:
        meta = meta.model_copy(
            update={
                "title": title or sanitize_title(filename.removesuffix(".md")) or filename,
                "summary": summary,
            }
        )
    return Note(
        level=level, filename=filename, meta=meta, body=body, sha256=digest, broken=broken, unparsed=unparsed
    )


def _conflicted_note(level: Level, filename: str, text: str, digest: str, sides: ConflictSides) -> Note:
    """A card git left with conflict markers: listed (by our side's title when it parses),
    never parsed into a prompt."""
    fallback = _fallback_type(filename)
    try:
        meta = parse_meta(split_note(sides.ours)[0], fallback_type=fallback)
        meta = meta.model_copy(
            update={
                "title": sanitize_title(meta.title) or filename,
                "summary": sanitize_summary(meta.summary),
            }
        )
    except FrontMatterError:
        meta = NoteMeta(title=filename.removesuffix(".md"), type=fallback, created="", updated="")
    return Note(
        level=level,
        filename=filename,
        meta=meta,
        body=text,
        sha256=digest,
        broken=conflict_reason(sides),
        unparsed=True,
        conflict=sides,
    )


def _is_sanitized(text: str, max_chars: int) -> bool:
    """True when ``sanitize_line(text, max_chars)`` would return ``text`` unchanged, decided
    without its per-character loop (most of the time of reading a large store).

    A printable string holds no escape sequence, control, format, surrogate or line/paragraph
    separator character, and no whitespace but the space (str.isprintable is False for every
    Cc, Cf, Cs, Zs but U+0020, Zl and Zp character); then sanitizing only collapses double
    spaces, strips leading ``#``/spaces and trailing spaces, and cuts at ``max_chars``. Anything
    else takes the full sanitizer.
    """
    return (
        _PRINTABLE_IS_SAFE
        and len(text) <= max_chars
        and text.isprintable()
        and "  " not in text
        and not text.startswith(("#", " "))
        and not text.endswith(" ")
    )


_TYPE_VALUES = frozenset(t.value for t in NoteType)
# The bidi and zero-width characters sanitize removes by name are all non-printable (category
# Cf); were one ever printable, ``_is_sanitized`` would always say no and the full path runs.
_PRINTABLE_IS_SAFE = not any(c.isprintable() for c in BIDI | ZERO_WIDTH)

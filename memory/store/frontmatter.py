"""Note files: YAML front matter written with a YAML library, and a tolerant reader."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

import yaml

from memory.constants import NoteType
from memory.model import Cite, NoteMeta
from memory.text.names import quote, sanitize_line

MAX_AUTHOR = 100

_FIELDS = ("title", "summary", "type", "created", "updated", "source")

# libyaml's loader when PyYAML was built with it: the pure-Python scanner was nearly all of
# the time of a cold ``memory list`` over a large store. Same safe subset of YAML either way.
YAML_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FrontMatterError(ValueError):
    pass


# The front matter ``dump_note`` writes is one ``key: value`` line per field, each value a
# plain or single-quoted one-line string, and a card's citations as a block list of
# ``path``/``lines``/``blob`` mappings. Such a head is read here without the YAML library's
# Python constructor (most of the time of reading a large store); anything else — other keys,
# comments, flow collections, multi-line or double-quoted scalars, tags, anchors, a plain value
# YAML would read as a number, date, bool or null — returns None and goes to YAML.
_LINE_RE = re.compile(r"(title|summary|type|created|updated|source|author|confirmed): (.+)")
_PINNED_LINE = "pinned: true"
_CITE_RE = re.compile(r"(- |  )(path|lines|blob): (.+)")
_PLAIN_FIRST_BAD = frozenset("-?:,[]{}#&*!|>'\"%@` ")
_STR_TAG = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()


def _scalar(value: str) -> str | None:
    """A one-line plain or single-quoted scalar as YAML reads it, when it is a string; else None."""
    if not value.isprintable():
        return None
    if value[0] == "'":
        inner = value[1:-1]
        if len(value) < 2 or value[-1] != "'" or "'" in inner.replace("''", ""):
            return None
        return inner.replace("''", "'")
    if (
        value[0] in _PLAIN_FIRST_BAD
        or value.endswith((" ", ":"))
        or ": " in value
        or " #" in value
        or _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) != _STR_TAG
    ):
        return None
    return value


def _simple_cites(lines: list[str], i: int) -> tuple[list[dict[str, str]] | None, int]:
    """The block list after a ``cites:`` line, from ``lines[i]``: (its mappings, the next line)."""
    items: list[dict[str, str]] = []
    while i < len(lines):
        m = _CITE_RE.fullmatch(lines[i])
        if m is None:
            break
        lead, key, raw = m.groups()
        if lead == "- ":
            items.append({})
        value = _scalar(raw)
        if not items or value is None or key in items[-1]:
            return None, i
        items[-1][key] = value
        i += 1
    return (items or None), i


def _simple_head(head: str) -> dict[str, Any] | None:
    """``head`` read as YAML would read it, when it is made only of simple lines; else None."""
    if "\r" in head or not head.endswith("\n"):
        return None
    out: dict[str, Any] = {}
    lines = head[:-1].split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "cites:" and "cites" not in out:
            cites, i = _simple_cites(lines, i + 1)
            if cites is None:
                return None
            out["cites"] = cites
            continue
        if lines[i] == _PINNED_LINE and "pinned" not in out:
            out["pinned"] = True
            i += 1
            continue
        m = _LINE_RE.fullmatch(lines[i])
        value = None if m is None else _scalar(m.group(2))
        if m is None or value is None:
            return None
        out[m.group(1)] = value
        i += 1
    return out


def dump_note(meta: NoteMeta, body: str) -> bytes:
    data: dict[str, Any] = {k: getattr(meta, k) for k in _FIELDS}
    data["type"] = str(meta.type)
    # Written only when present: a card without an author or citations keeps the six-line head.
    if meta.author:
        data["author"] = meta.author
    if meta.cites:
        data["cites"] = [c.model_dump(exclude_none=True) for c in meta.cites]
    if meta.confirmed:
        data["confirmed"] = meta.confirmed
    if meta.pinned:
        data["pinned"] = True
    head = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000, default_flow_style=False)
    if body and not body.endswith("\n"):
        body += "\n"
    return f"---\n{head}---\n{body}".encode()


def _as_text(v: Any) -> str:
    if isinstance(v, _dt.datetime):
        v = v if v.tzinfo else v.replace(tzinfo=_dt.UTC)
        return v.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(v, _dt.date):
        return v.isoformat()
    return "" if v is None else str(v)


def split_note(text: str) -> tuple[dict[str, Any], str]:
    """Return (front matter mapping, body). Raises FrontMatterError with a one-line reason."""
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        raise FrontMatterError("no front matter (the file must start with a '---' line)")
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") == "---":
            head = "".join(lines[1:i])
            body = "".join(lines[i + 1 :])
            break
    else:
        raise FrontMatterError("front matter is not closed by a '---' line")
    simple = _simple_head(head) if head else None
    if simple is not None:
        return simple, body
    try:
        data = yaml.load(head, Loader=YAML_LOADER) if head.strip() else {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise FrontMatterError(f"front matter is not valid YAML{where}") from None
    if not isinstance(data, dict):
        raise FrontMatterError("front matter is not a mapping")
    return data, body


def parse_meta(data: dict[str, Any], *, fallback_type: NoteType | None = None) -> NoteMeta:
    title = _as_text(data.get("title")).strip()
    if not title:
        raise FrontMatterError("front matter has no title")
    raw_type = _as_text(data.get("type")).strip()
    try:
        note_type = NoteType(raw_type)
    except ValueError:
        if fallback_type is None:
            raise FrontMatterError(f"unknown type {quote(raw_type)}") from None
        note_type = fallback_type
    return NoteMeta(
        title=title,
        summary=_as_text(data.get("summary")),
        type=note_type,
        created=_as_text(data.get("created")),
        updated=_as_text(data.get("updated")),
        source=_as_text(data.get("source")) or "manual",
        # A name from a cloned repository is shown in the panel: one short plain line.
        author=sanitize_line(_as_text(data.get("author")), MAX_AUTHOR),
        cites=parse_cites(data.get("cites")),
        confirmed=_as_text(data.get("confirmed")),
        # Only YAML's true (or the word, from a hand edit that quoted it): anything else unpins.
        pinned=data.get("pinned") is True or _as_text(data.get("pinned")).strip().lower() == "true",
    )


_MAX_CITES_READ = 64
_BLOB_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}|sha256:[0-9a-f]{64}")
_LINES_RE = re.compile(r"[1-9][0-9]{0,8}(?:-[1-9][0-9]{0,8})?")


def parse_cites(value: Any) -> tuple[Cite, ...]:
    """The ``cites`` of a front matter, read leniently: an entry that is not a mapping with a
    string path and a well-formed blob id is skipped (the card is still a card; it just rests
    on nothing that can be checked)."""
    if not isinstance(value, list):
        return ()
    out: list[Cite] = []
    for item in value[:_MAX_CITES_READ]:
        if not isinstance(item, dict):
            continue
        path, blob, lines = item.get("path"), item.get("blob"), item.get("lines")
        if not isinstance(path, str) or not path or len(path) > 4096 or "\x00" in path:
            continue
        if not isinstance(blob, str) or not _BLOB_RE.fullmatch(blob):
            continue
        text = None if lines is None else str(lines)
        if text is not None and not _LINES_RE.fullmatch(text):
            text = None
        out.append(Cite(path=path, lines=text, blob=blob))
    return tuple(out)

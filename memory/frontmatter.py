"""Note files: YAML front matter written with a YAML library, and a tolerant reader."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import yaml

from .model import NoteMeta, NoteType
from .sanitize import quote

_FIELDS = ("title", "summary", "type", "created", "updated", "source")

# libyaml's loader when PyYAML was built with it: the pure-Python scanner was nearly all of
# the time of a cold ``memory list`` over a large store. Same safe subset of YAML either way.
YAML_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FrontMatterError(ValueError):
    pass


def dump_note(meta: NoteMeta, body: str) -> bytes:
    data = {k: getattr(meta, k) for k in _FIELDS}
    data["type"] = str(meta.type)
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
    )

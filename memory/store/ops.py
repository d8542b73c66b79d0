"""The rules every operation meets before a commit: one op at a time, so one bad op never
sinks a batch.

An op comes from an untrusted source (a model's answer, a held op approved later, a person's card
form): each is checked for its fields, sized, sanitized (titles and summaries one line, filenames
safe) and redacted here, and the store's transaction runs every op it takes through this again.
The extraction parser (memory/extract/parser.py) is one producer of the raw items.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from memory.constants import MAX_CONTENT_BYTES, MAX_OPS, Action, Level, NoteType
from memory.model import Operation, Rejection
from memory.text.names import check_filename, sanitize_line, sanitize_summary, sanitize_title
from memory.text.redact import redact
from memory.text.terminal import is_strict_utf8

__all__ = ["IndexedOp", "op_pairs", "validate_operations"]

_REJECTED_OP_STR = 200
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class IndexedOp(NamedTuple):
    """A valid op and its place in the batch; unpacks as ``(index, op)``."""

    index: int  # type: ignore[assignment]  # shadows tuple.index on purpose: the field is the op's place
    op: Operation


def op_pairs(ops: Sequence[Any]) -> list[tuple[int, Any]]:
    """A batch as ``(index, op)`` pairs: ``IndexedOp``s (or anything with ``.index``/``.op``) or
    ``(index, op)`` tuples already."""
    return [(o.index, o.op) if hasattr(o, "op") else (o[0], o[1]) for o in ops]


class _Invalid(Exception):
    pass


def _safe_copy(value: object, depth: int = 0) -> object:
    """A small, storable, redacted copy of a rejected op for the job and the history."""
    if isinstance(value, str):
        return redact(_LONE_SURROGATE.sub("\ufffd", value))[:_REJECTED_OP_STR]
    if isinstance(value, bool | int | float) or value is None:
        return value
    if depth >= 3:
        return "…"
    if isinstance(value, dict):
        items = list(value.items())[:20]
        return {str(_safe_copy(str(k), depth + 1)): _safe_copy(v, depth + 1) for k, v in items}
    if isinstance(value, list):
        return [_safe_copy(v, depth + 1) for v in value[:20]]
    return repr(value)[:_REJECTED_OP_STR]


def _quote(value: str) -> str:
    """A short, one-line rendering of a bad value for a reason."""
    return json.dumps(sanitize_line(value, 40), ensure_ascii=False)


_NEEDS = {
    "create": "create needs level, type, title and content",
    "update": "update needs level, filename and content",
    "delete": "delete needs level and filename",
}


def _string(item: dict[str, object], field: str, *, required: bool) -> str | None:
    value = item.get(field)
    if value is None:
        if required:
            action = item.get("action")
            needs = _NEEDS.get(action.strip().lower(), "") if isinstance(action, str) else ""
            raise _Invalid(f"missing {field}" + (f" ({needs})" if needs else ""))
        return None
    if not isinstance(value, str):
        raise _Invalid(f"{field} must be a string, got {_json_type(value)}")
    if not is_strict_utf8(value):
        raise _Invalid(f"{field} is not valid UTF-8 (lone surrogate)")
    return value


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _enum(item: dict[str, object], field: str, allowed: list[str], *, required: bool) -> str | None:
    raw = _string(item, field, required=required)
    if raw is None:
        return None
    value = raw.strip().lower()
    if value not in allowed:
        expected = ", ".join(allowed[:-1]) + " or " + allowed[-1]
        raise _Invalid(f"unknown {field} {_quote(raw)} (expected {expected})")
    return value


def _required_enum(item: dict[str, object], field: str, allowed: list[str]) -> str:
    value = _enum(item, field, allowed, required=True)
    assert value is not None  # a required field raises when missing
    return value


def _content(item: dict[str, object]) -> str:
    content = _string(item, "content", required=True)
    assert content is not None
    if len(content.encode("utf-8")) > MAX_CONTENT_BYTES:
        raise _Invalid(f"content is larger than {MAX_CONTENT_BYTES} bytes")
    if not content.strip():
        raise _Invalid("content is empty")
    content = redact(content)
    if len(content.encode("utf-8")) > MAX_CONTENT_BYTES:
        raise _Invalid(f"content is larger than {MAX_CONTENT_BYTES} bytes after redacting secrets")
    return content


def _title(item: dict[str, object], *, required: bool) -> str | None:
    raw = _string(item, "title", required=required)
    if raw is None:
        return None
    # Sanitize before redacting (an invisible character could hide a key from the patterns),
    # then cut again: a redaction marker can be longer than what it replaced.
    title = sanitize_title(redact(sanitize_line(raw, len(raw))))
    if not title:
        if required:
            raise _Invalid("title is empty")
        return None  # an update with an empty title keeps the note's title
    return title


def _summary(item: dict[str, object]) -> str | None:
    raw = _string(item, "summary", required=False)
    if raw is None:
        return None
    return sanitize_summary(redact(sanitize_line(raw, len(raw))))


def _filename(item: dict[str, object]) -> str:
    name = _string(item, "filename", required=True)
    assert name is not None
    reason = check_filename(name)
    if reason is not None:
        raise _Invalid(reason)
    return name


_ACTIONS = [a.value for a in Action]
_LEVELS = [lv.value for lv in Level]
_TYPES = [t.value for t in NoteType]


# Citations are checked against the workspace by the transaction (memory.grounding), which
# says why it drops each one; here they are only bounded, so a huge list costs nothing.
_MAX_RAW_CITES = 64
_MAX_RAW_CITE_CHARS = 2048


def _bounded_cite(item: object) -> object:
    if isinstance(item, str):
        return (
            item[: _MAX_RAW_CITE_CHARS + 1] if is_strict_utf8(item) else _LONE_SURROGATE.sub("\ufffd", item)
        )
    if isinstance(item, dict):
        return {k: _bounded_cite(item[k]) for k in ("path", "lines") if k in item}
    if isinstance(item, bool | int | float) or item is None:
        return item
    return []  # an array (or anything else): refused by its kind, its content is not kept


def _cites(item: dict[str, object]) -> tuple[object, ...] | None:
    raw = item.get("cites")
    if raw is None:
        return None
    items = raw if isinstance(raw, list) else [raw]
    return tuple(_bounded_cite(c) for c in items[:_MAX_RAW_CITES])


def _validate_one(item: object) -> Operation | None:
    """One op, or None for a noop; raises _Invalid with the reason."""
    if not isinstance(item, dict):
        raise _Invalid(f"expected a JSON object, got {_json_type(item)}")
    action = _enum(item, "action", _ACTIONS, required=True)
    if action == Action.NOOP:
        return None
    level = Level(_required_enum(item, "level", _LEVELS))
    if action == Action.CREATE:
        note_type: NoteType | None = NoteType(_required_enum(item, "type", _TYPES))
        title = _title(item, required=True)
        summary = _summary(item)
        slug = _string(item, "slug", required=False)
        content = _content(item)
        return Operation(
            action=Action.CREATE,
            level=level,
            type=note_type,
            title=title,
            summary=summary,
            slug=slug,
            content=content,
            cites=_cites(item),
        )
    if action == Action.UPDATE:
        filename = _filename(item)
        given = _enum(item, "type", _TYPES, required=False)
        note_type = None if given is None else NoteType(given)
        title = _title(item, required=False)
        summary = _summary(item)
        content = _content(item)
        return Operation(
            action=Action.UPDATE,
            level=level,
            type=note_type,
            title=title,
            summary=summary,
            filename=filename,
            content=content,
            cites=_cites(item),
        )
    return Operation(action=Action.DELETE, level=level, filename=_filename(item))


def validate_operations(items: list[object]) -> tuple[list[IndexedOp], list[Rejection]]:
    """Validate each item alone; ``index`` is its place in the batch. Noops yield nothing."""
    ops: list[IndexedOp] = []
    rejected: list[Rejection] = []
    for index, item in enumerate(items):
        copy = _safe_copy(item) if isinstance(item, dict) else None
        op_copy = copy if isinstance(copy, dict) else None
        if index >= MAX_OPS:
            reason = f"op {index}: over the batch limit of {MAX_OPS} operations; not applied"
            rejected.append(Rejection(index=index, reason=reason, op=op_copy))
            continue
        try:
            op = _validate_one(item)
        except _Invalid as e:
            rejected.append(Rejection(index=index, reason=f"op {index}: {e}", op=op_copy))
            continue
        if op is not None:
            ops.append(IndexedOp(index=index, op=op))
    return ops, rejected

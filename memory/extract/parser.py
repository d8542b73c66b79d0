"""Parse the extraction model's answer into validated operations.

The answer is untrusted text: the first JSON array of ops (or ``{"operations": [...]}``)
is taken wherever it sits, and every op is validated alone (memory/store/ops.py, the store's own
admission rules) so one bad op never sinks a batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from memory.model import Rejection
from memory.store.ops import IndexedOp, validate_operations

__all__ = [
    "MAX_INPUT_CHARS",
    "MAX_JSON_CANDIDATES",
    "ParseResult",
    "extract_operations",
    "find_json",
    "parse_and_validate",
]

# Work bounds against hostile or runaway answers.
MAX_INPUT_CHARS = 1 << 20
MAX_JSON_CANDIDATES = 10_000
# Characters the decoder may walk in total before the search gives up (nested candidates
# re-parse the same text).
_MAX_DECODE_WORK = 16 * MAX_INPUT_CHARS


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constants)


def find_json(text: str, accept: Callable[[Any], Any | None], starts: str = "[{") -> Any | None:
    """The first JSON value starting at a character of ``starts`` that ``accept`` maps to a
    non-None result. Tolerates prose, fences and stray brackets around it."""
    text = text[:MAX_INPUT_CHARS]
    work = 0
    tried = 0
    pos = 0
    while tried < MAX_JSON_CANDIDATES and work < _MAX_DECODE_WORK:
        pos = min((i for i in (text.find(c, pos) for c in starts) if i >= 0), default=-1)
        if pos < 0:
            return None
        tried += 1
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            # An unterminated string is reported at its start, though it was scanned to the end.
            scanned = len(text) if e.msg.startswith("Unterminated string") else e.pos
            work += max(scanned - pos, 1)
        except (ValueError, RecursionError):
            # Constants, huge integers, absurd nesting: count the rest of the text as spent.
            work += len(text) - pos
        else:
            work += end - pos
            result = accept(value)
            if result is not None:
                return result
        pos += 1
    return None


def _accept_operations(value: Any) -> list[object] | None:
    # An array is the answer when it is empty or holds at least one op-like object; its other
    # items are then rejected one by one (never the whole batch for one bad item).
    if isinstance(value, list) and (
        not value or any(isinstance(item, dict) and "action" in item for item in value)
    ):
        return value
    if isinstance(value, dict) and isinstance(value.get("operations"), list):
        return value["operations"]
    return None


def extract_operations(text: str) -> list[object] | None:
    """The first JSON array of ops (``[]``, or one with at least one object holding
    ``"action"``) or ``{"operations": [...]}`` in ``text``; None when there is none."""
    return find_json(text, _accept_operations)


# -- the answer as ops ------------------------------------------------------------------


class ParseResult(BaseModel):
    ops: list[IndexedOp] = Field(default_factory=list)
    rejected: list[Rejection] = Field(default_factory=list)
    # False when no JSON operations could be found at all (the worker may re-ask).
    found: bool = True


def parse_and_validate(text: str) -> ParseResult:
    items = extract_operations(text)
    if items is None:
        return ParseResult(found=False)
    ops, rejected = validate_operations(items)
    return ParseResult(ops=ops, rejected=rejected, found=True)

"""What the model is given for an MCP tool's answer: its text content as text, every other
content block as a one-line note, and the server's ``isError`` as a tool error.

Works on the SDK's result objects by their fields only, so this module does not import the SDK.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memory.text.lines import format_bytes, one_line

__all__ = ["McpResult", "content_text", "tool_result"]


@dataclass(frozen=True)
class McpResult:
    """An MCP tool call's answer for the model (``is_error`` maps to the API's ``is_error``)."""

    content: str
    is_error: bool = False


def _b64_size(data: Any) -> str:
    n = len(data) * 3 // 4 if isinstance(data, str) else 0
    return format_bytes(n)


def _note(block: Any) -> str:
    """A non-text block as one line: what it is, never its bytes."""
    kind = getattr(block, "type", None) or type(block).__name__
    mime = getattr(block, "mime_type", None) or "unknown type"
    if kind in ("image", "audio"):
        return f"[{kind} {mime}, {_b64_size(getattr(block, 'data', None))}: not shown]"
    if kind == "resource_link":
        name = getattr(block, "name", None)
        return f"[resource link {one_line(getattr(block, 'uri', ''), 200)}" + (
            f" ({one_line(name, 80)})]" if name else "]"
        )
    return f"[{one_line(kind, 40)} content: not shown]"


def content_text(blocks: Iterable[Any]) -> str:
    """Content blocks (a tool's or a prompt message's) as text, one part per block."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind == "resource":
            # An embedded resource: its text when it has one, else a note.
            res = getattr(block, "resource", None)
            text = getattr(res, "text", None)
            if isinstance(text, str):
                parts.append(text)
            else:
                mime = getattr(res, "mime_type", None) or "unknown type"
                parts.append(
                    f"[resource {one_line(getattr(res, 'uri', ''), 200)} {mime}, "
                    f"{_b64_size(getattr(res, 'blob', None))}: not shown]"
                )
        else:
            parts.append(_note(block))
    return "\n".join(parts)


def tool_result(result: Any) -> McpResult:
    """A ``CallToolResult`` for the model. An answer with no content but structured content
    gives that as JSON; an error with no words still says it is one."""
    text = content_text(getattr(result, "content", None) or ())
    if not text:
        structured = getattr(result, "structured_content", None)
        if structured is not None:
            text = json.dumps(structured, ensure_ascii=False)
    is_error = bool(getattr(result, "is_error", False))
    if not text:
        text = "the tool reported an error without a message" if is_error else "(no content)"
    return McpResult(text, is_error)

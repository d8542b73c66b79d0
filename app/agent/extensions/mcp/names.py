"""Names the model calls MCP tools by: ``mcp__SERVER__TOOL`` within the Messages API's tool-name
charset, in one stable order (server, then tool) whatever server answered first, so the tool
list of a request is the same from turn to turn and the prompt cache holds."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["PREFIX", "api_name", "assign_names", "sanitize"]

PREFIX = "mcp__"
_API_NAME_RE = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_NOT_ALLOWED_RE = re.compile(r"[^a-zA-Z0-9_-]")


def sanitize(part: str) -> str:
    """``part`` with every character the API refuses in a tool name made ``_``."""
    return _NOT_ALLOWED_RE.sub("_", part)


def api_name(server: str, tool: str) -> str:
    """``mcp__SERVER__TOOL`` (sanitized; may be too long: see :func:`assign_names`)."""
    return f"{PREFIX}{sanitize(server)}__{sanitize(tool)}"


def assign_names(pairs: Iterable[tuple[str, str]]) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """Each ``(server, tool)`` its API name, in sorted order; and one line for each one
    refused: a name over 64 characters, or one another tool earlier in that order took."""
    named: dict[str, tuple[str, str]] = {}
    refused: list[str] = []
    for server, tool in sorted(set(pairs)):
        name = api_name(server, tool)
        if not _API_NAME_RE.fullmatch(name):
            refused.append(
                f"MCP tool {tool!r} of {server!r} left out: its name {name!r} is over 64 characters"
            )
        elif name in named:
            other = named[name]
            refused.append(
                f"MCP tool {tool!r} of {server!r} left out: its name {name!r} is taken by "
                f"{other[1]!r} of {other[0]!r}"
            )
        else:
            named[name] = (server, tool)
    return named, refused

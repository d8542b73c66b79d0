"""Permission gates: who decides whether a writing or executing tool call may run."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from app.agent.tools.specs import TOOL_SPECS, needs_permission


@dataclass
class PermissionDecision:
    allowed: bool
    reason: str = ""


@runtime_checkable
class PermissionGate(Protocol):
    """``call_id`` and ``depth`` tie a decision to its tool block (0: top-level agent, n: sub-agent).

    A gate that asks a person may also have ``will_ask(name) -> bool``: True when ``decide``
    for that tool would open a question now, so that the call shows as waiting for permission
    (not as running) while it is open. A gate without it never asks. A denial's ``reason`` is
    the text of the tool result the model gets."""

    async def decide(
        self, name: str, tool_input: dict[str, Any], *, call_id: str, depth: int
    ) -> PermissionDecision: ...


class AllowListGate:
    """Print mode's gate: reading tools always run; writing and executing ones only if named."""

    def __init__(self, allowed: Iterable[str]) -> None:
        self.allowed = frozenset(allowed)

    async def decide(
        self, name: str, tool_input: dict[str, Any], *, call_id: str = "", depth: int = 0
    ) -> PermissionDecision:
        if name in self.allowed or not needs_permission(name):
            return PermissionDecision(True)
        return PermissionDecision(
            False,
            f"{name} was denied: print mode allows only the tools named in --allow-tools ({name} is not)",
        )


def parse_allow_tools(value: str) -> frozenset[str]:
    """``"bash,write_file"`` -> the names; an unknown name raises ValueError (one line)."""
    names = [n.strip() for n in value.split(",")]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in TOOL_SPECS]
    if unknown:
        raise ValueError(
            f"unknown tool name(s) in --allow-tools: {', '.join(unknown)}; valid names: {', '.join(TOOL_SPECS)}"
        )
    return frozenset(names)

"""The agent's tools: each one object (``tool.Tool``) in one registry (``registry.ToolRegistry``).

A built-in tool is one module of ``builtin/`` and one line of its list; the MCP servers' tools join
the same registry. What a call may do is the permission gate's (app/agent/permissions/gate.py).
"""

from __future__ import annotations

from app.agent.tools.base import CardRead, ResultView, ToolContext, ToolError, ToolInput, ToolResult
from app.agent.tools.registry import (
    BUILTIN_TOOLS,
    ToolRegistry,
    ToolSource,
    api_tools,
    call_tool,
    run_tool,
)
from app.agent.tools.tool import AnyTool, Preview, RuleTarget, Tool, ToolKind, ToolParam

__all__ = [
    "BUILTIN_TOOLS",
    "AnyTool",
    "CardRead",
    "Preview",
    "ResultView",
    "RuleTarget",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolInput",
    "ToolKind",
    "ToolParam",
    "ToolRegistry",
    "ToolResult",
    "ToolSource",
    "api_tools",
    "call_tool",
    "run_tool",
]

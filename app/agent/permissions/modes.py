"""The permission modes: how much a turn may do without asking.

- ``default``: as the rules say (writing, executing, network and MCP tools ask unless a rule
  allows them).
- ``accept-edits``: ``edit_file``/``write_file`` inside the workspace run without asking; ``bash``,
  the network and MCP tools still follow the rules.
- ``plan``: read-only. Only the tools the registry marks read-only run; every other call is
  refused with a one-line plan-mode reason, and no window opens. The model proposes a plan with
  ``exit_plan_mode``, which the person approves (then ``accept-edits`` or ``default``) or not.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["PermissionMode"]


class PermissionMode(StrEnum):
    DEFAULT = "default"
    ACCEPT_EDITS = "accept-edits"
    PLAN = "plan"

    def next(self) -> PermissionMode:
        """The mode Shift+Tab goes to: default → accept-edits → plan → default."""
        order = list(PermissionMode)
        return order[(order.index(self) + 1) % len(order)]

"""The permission modes: how much a turn may do without asking.

- ``default``: as the rules say (writing, executing, network and MCP tools ask unless a rule
  allows them).
- ``accept-edits``: ``edit_file``/``write_file`` inside the workspace run without asking; ``bash``,
  the network and MCP tools still follow the rules.
- ``plan``: read-only. Only the tools the registry marks read-only run; every other call is
  refused with a one-line plan-mode reason, and no window opens. The model proposes a plan with
  ``exit_plan_mode``, which the person approves (then ``accept-edits`` or ``default``) or not.

Which mode a run starts in (``configured_mode``): the ``--permission-mode`` flag, else
``PSEUDOCLAUDE_PERMISSION_MODE``, else the project's ``.PseudoClaude/settings.local.toml``, else its
shared ``.PseudoClaude/settings.toml`` (whose ``accept-edits`` waits for trust: see
``loading``), else the user's ``config.toml``, else ``default``. The person changes it from there
(Shift+Tab, a plan approved): that choice holds for the rest of the run, over ``/clear`` and
``/resume`` too.

Light on purpose: the command line imports it for the flag's choices before anything else.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.agent.config.settings import Settings

__all__ = ["PermissionMode", "configured_mode"]


class PermissionMode(StrEnum):
    DEFAULT = "default"
    ACCEPT_EDITS = "accept-edits"
    PLAN = "plan"

    def next(self) -> PermissionMode:
        """The mode Shift+Tab goes to: default → accept-edits → plan → default."""
        order = list(PermissionMode)
        return order[(order.index(self) + 1) % len(order)]


def configured_mode(settings: Settings, project: PermissionMode | None) -> PermissionMode:
    """The mode a run starts in, by the order above (``project``: the project's files' mode in
    force, ``PermissionRules.mode``)."""
    if settings.permission_mode is not None and settings.given_for_run("permission_mode"):
        return PermissionMode(settings.permission_mode)
    if project is not None:
        return project
    if settings.permission_mode is not None:
        return PermissionMode(settings.permission_mode)
    return PermissionMode.DEFAULT

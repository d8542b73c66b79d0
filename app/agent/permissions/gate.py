"""The one permission gate: whether a tool call may run, decided in one place for every tool.

In order:

1. a ``deny`` rule refuses (in every mode);
2. in the ``plan`` permission mode a tool that is not ``plan_safe`` (read-only, or one that only
   talks to the person or a read-only sub-agent) is refused with a one-line plan-mode reason, and
   nobody is asked: not an allow rule, ``--allow-tools`` nor a session answer lets it run;
3. the run's allowances allow what they name (``--allow-tools`` as tool names);
4. an ``allow`` rule allows; an ``ask`` rule, or the tool's default (writing, executing, network
   and MCP tools ask, the rest run), goes on;
5. in ``accept-edits`` a writing tool (kind ``write``) whose paths all lie inside the workspace,
   outside the files that configure what runs without asking (``.PseudoClaude/``, ``.claude/``,
   ``.mcp.json``), runs when only its default asked: an ``ask`` rule still asks, and ``bash``, the
   network and MCP tools follow the rules as in ``default``;
6. a "for the session" answer allows the tool;
7. the person is asked through ``ask`` (the face's window, shown the tool's own preview). Without
   ``ask`` (print mode) nobody can be asked and the call is refused, saying why and naming the rule
   that would allow it (what "always allow" would save: ``web_fetch(domain:docs.python.org)``,
   never a wider one).

A denial's reason is the tool result the model gets. The permission mode is read at each call: a
change mid-turn (Shift+Tab, a plan approved) counts from the next call.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from app.agent.permissions.modes import PermissionMode
from app.agent.permissions.question import Answer, Ask, Question
from app.agent.permissions.rules import Decision, PermissionRules, RuleDecision
from app.agent.permissions.suggestions import suggest
from app.agent.tools.base import ToolContext, ToolInput
from app.agent.tools.tool import AnyTool, ToolKind
from memory.text.lines import one_line

__all__ = [
    "CONFIG_NAMES",
    "NOTE_MAX_CHARS",
    "NO_ASK",
    "Gate",
    "PermissionDecision",
    "RunAllowances",
    "edits_inside",
    "plan_reason",
]

NO_ASK = "print mode runs it only when a rule or --allow-tools allows it"
NOTE_MAX_CHARS = 300
HINT_MAX_CHARS = 300
# What decides which calls run without asking (rules, hooks, commands, MCP servers): an edit there
# could loosen the rules themselves, so accept-edits still asks for it. Compared case-folded, as
# a path part (a case-insensitive file system names the same folder either way).
CONFIG_NAMES = frozenset({".pseudoclaude", ".claude", ".mcp.json"})


def plan_reason(tool: str) -> str:
    """The one line a call refused in plan mode gets."""
    return (
        f"plan mode: {tool} changes things and does not run while planning; "
        "propose the plan with exit_plan_mode"
    )


def edits_inside(workspace: Path, paths: list[str]) -> bool:
    """Whether every one of ``paths`` (as a tool was given them; at least one) lies inside the
    workspace, as written and where it really is, and outside its configuration (``CONFIG_NAMES``).
    Blocking: it resolves symlinks."""
    if not paths:
        return False
    ws = os.path.realpath(workspace)
    for raw in paths:
        if not raw or "\x00" in raw:
            return False
        joined = raw if os.path.isabs(raw) else os.path.join(ws, raw)
        for where in (os.path.normpath(joined), os.path.realpath(joined)):
            rel = os.path.relpath(where, ws)
            parts = Path(rel).parts
            if rel == "." or not parts or parts[0] == os.pardir:
                return False
            if any(part.casefold() in CONFIG_NAMES for part in parts):
                return False
    return True


@dataclass(frozen=True)
class PermissionDecision:
    allowed: bool
    reason: str = ""


class RunAllowances(BaseModel):
    """What a run allows by itself, after the deny rules and before the others: the tools named
    in ``allowed`` run without asking (in every permission mode but ``plan``)."""

    model_config = ConfigDict(frozen=True)

    allowed: frozenset[str] = frozenset()


class Gate:
    """``rules``: the rules in force, or a function giving them as they are now (a rule saved
    mid-session counts from the next call). ``ask``: the face's window, or None (print mode).
    ``session_allowed``: the tools a "for the session" answer allowed (``reset`` forgets them).
    ``permission_mode``: how much runs without asking, read at each call (the runtime sets it)."""

    def __init__(
        self,
        rules: PermissionRules | Callable[[], PermissionRules],
        *,
        ask: Ask | None = None,
        allowances: RunAllowances | None = None,
        no_ask: str = NO_ASK,
        permission_mode: PermissionMode = PermissionMode.DEFAULT,
    ) -> None:
        self._rules = rules if callable(rules) else (lambda: rules)
        self.ask = ask
        self.allowances = allowances if allowances is not None else RunAllowances()
        self.no_ask = no_ask
        self.session_allowed: set[str] = set()
        self.permission_mode = PermissionMode(permission_mode)

    @property
    def rules(self) -> PermissionRules:
        return self._rules()

    def reset(self) -> None:
        """A new session: "allow for the session" answers are forgotten (the permission mode
        stays: it is the person's choice for this run, not the session's)."""
        self.session_allowed.clear()

    def plan_refusal(self, tool: AnyTool) -> str | None:
        """The plan-mode line refusing a call of ``tool`` now; None when the mode lets it run."""
        if self.permission_mode == PermissionMode.PLAN and not tool.plan_safe:
            return plan_reason(tool.name)
        return None

    def _ruled(self, tool: AnyTool, args: ToolInput) -> RuleDecision:
        default: Decision = "ask" if tool.asks else "allow"
        return self.rules.decide(tool.name, tool.rule_target(args), default=default)

    def _needs_person(self, tool: AnyTool, args: ToolInput, ruled: RuleDecision) -> bool:
        if ruled.decision != "ask":
            return False
        if tool.name in self.allowances.allowed or tool.name in self.session_allowed:
            return False
        return not self._accepted_edit(tool, args, ruled)

    def _accepted_edit(self, tool: AnyTool, args: ToolInput, ruled: RuleDecision) -> bool:
        """accept-edits lets a write inside the workspace run when only the tool's default asked
        (``ruled.rule`` None: an ``ask`` rule is the person's own word for that call)."""
        return (
            self.permission_mode == PermissionMode.ACCEPT_EDITS
            and tool.kind == ToolKind.WRITE
            and ruled.rule is None
            and edits_inside(self.rules.workspace, tool.paths(args))
        )

    def will_ask(self, tool: AnyTool, args: ToolInput) -> bool:
        """Whether ``decide`` would open the person's window now (the call shows as waiting)."""
        if self.ask is None or self.plan_refusal(tool) is not None:
            return False
        return self._needs_person(tool, args, self._ruled(tool, args))

    async def decide(
        self, tool: AnyTool, args: ToolInput, *, ctx: ToolContext, call_id: str = "", depth: int = 0
    ) -> PermissionDecision:
        ruled = self._ruled(tool, args)
        if ruled.decision == "deny":
            return PermissionDecision(False, ruled.reason)
        planning = self.plan_refusal(tool)
        if planning is not None:
            return PermissionDecision(False, planning)
        if not self._needs_person(tool, args, ruled):
            return PermissionDecision(True)
        if self.ask is None:
            return PermissionDecision(False, await self._refused(tool, args, ctx, ruled))
        question = await self._question(tool, args, ctx, call_id, depth)
        return self._answered(tool, await self.ask(question))

    async def _refused(self, tool: AnyTool, args: ToolInput, ctx: ToolContext, ruled: RuleDecision) -> str:
        """Why nobody could be asked, and the rule that would allow the call when one covers all
        of it (an ask rule wins over any allow rule, and the parts of a command no rule may
        remember leave none to name)."""
        reason = f"{tool.name} was denied: {self.no_ask} ({ruled.reason})"
        if ruled.rule is not None:
            return reason
        proposed = await asyncio.to_thread(suggest, tool.name, tool.rule_target(args), ctx.workspace)
        if not proposed.rules or proposed.still_asks:
            return reason
        what = "the rule" if len(proposed.rules) == 1 else "the rules"
        return f"{reason}; {what} {one_line(', '.join(proposed.rules), HINT_MAX_CHARS)} would allow it"

    async def _question(
        self, tool: AnyTool, args: ToolInput, ctx: ToolContext, call_id: str, depth: int
    ) -> Question:
        # Both may read the disk (the file an edit changes, where a path really is): off the loop.
        preview = await asyncio.to_thread(tool.preview, args, ctx)
        proposed = await asyncio.to_thread(suggest, tool.name, tool.rule_target(args), ctx.workspace)
        return Question(
            call_id=call_id,
            depth=depth,
            tool=tool.name,
            input=args,
            preview=preview,
            rules=proposed.rules,
            still_asks=proposed.still_asks,
        )

    def _answered(self, tool: AnyTool, answer: Answer) -> PermissionDecision:
        if answer.choice == "session":
            self.session_allowed.add(tool.name)
        if answer.choice != "deny":  # "always": the face saved the rule (or said why not)
            return PermissionDecision(True)
        # Cleaned again whatever the face did: one line, no control, bidi or invisible
        # characters, bounded.
        note = one_line(answer.note, NOTE_MAX_CHARS)
        if note:
            return PermissionDecision(False, f"{tool.name} was denied by the user, who said: {note}")
        return PermissionDecision(False, f"{tool.name} was denied by the user")

"""The one permission gate: whether a tool call may run, decided in one place for every tool.

In order: a ``deny`` rule refuses; the mode allows what it names (a run's allow-list); an ``allow``
rule allows and an ``ask`` rule (or the tool's default: writing, executing and MCP tools ask, the
rest run) goes on; a "for the session" answer allows the tool; then the person is asked through
``ask`` (the face's window, shown the tool's own preview). Without ``ask`` (print mode) nobody can
be asked and the call is refused, saying why and naming the rule that would allow it (what
"always allow" would save: ``web_fetch(domain:docs.python.org)``, never a wider one). A denial's
reason is the tool result the model gets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from app.agent.permissions.question import Answer, Ask, Question
from app.agent.permissions.rules import Decision, PermissionRules, RuleDecision
from app.agent.permissions.suggestions import suggest
from app.agent.tools.base import ToolContext, ToolInput
from app.agent.tools.tool import AnyTool
from memory.text.lines import one_line

__all__ = ["NOTE_MAX_CHARS", "NO_ASK", "Gate", "Mode", "PermissionDecision"]

NO_ASK = "print mode runs it only when a rule or --allow-tools allows it"
NOTE_MAX_CHARS = 300
HINT_MAX_CHARS = 300


@dataclass(frozen=True)
class PermissionDecision:
    allowed: bool
    reason: str = ""


class Mode(BaseModel):
    """What a run allows by itself, after the deny rules and before the others: the tools named
    in ``allowed`` run without asking."""

    model_config = ConfigDict(frozen=True)

    allowed: frozenset[str] = frozenset()


class Gate:
    """``rules``: the rules in force, or a function giving them as they are now (a rule saved
    mid-session counts from the next call). ``ask``: the face's window, or None (print mode).
    ``session_allowed``: the tools a "for the session" answer allowed (``reset`` forgets them)."""

    def __init__(
        self,
        rules: PermissionRules | Callable[[], PermissionRules],
        *,
        ask: Ask | None = None,
        mode: Mode | None = None,
        no_ask: str = NO_ASK,
    ) -> None:
        self._rules = rules if callable(rules) else (lambda: rules)
        self.ask = ask
        self.mode = mode if mode is not None else Mode()
        self.no_ask = no_ask
        self.session_allowed: set[str] = set()

    @property
    def rules(self) -> PermissionRules:
        return self._rules()

    def reset(self) -> None:
        """A new session: "allow for the session" answers are forgotten."""
        self.session_allowed.clear()

    def _ruled(self, tool: AnyTool, args: ToolInput) -> RuleDecision:
        default: Decision = "ask" if tool.asks else "allow"
        return self.rules.decide(tool.name, tool.rule_target(args), default=default)

    def _needs_person(self, tool: AnyTool, ruled: RuleDecision) -> bool:
        return (
            ruled.decision == "ask"
            and tool.name not in self.mode.allowed
            and tool.name not in self.session_allowed
        )

    def will_ask(self, tool: AnyTool, args: ToolInput) -> bool:
        """Whether ``decide`` would open the person's window now (the call shows as waiting)."""
        if self.ask is None:
            return False
        return self._needs_person(tool, self._ruled(tool, args))

    async def decide(
        self, tool: AnyTool, args: ToolInput, *, ctx: ToolContext, call_id: str = "", depth: int = 0
    ) -> PermissionDecision:
        ruled = self._ruled(tool, args)
        if ruled.decision == "deny":
            return PermissionDecision(False, ruled.reason)
        if not self._needs_person(tool, ruled):
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

"""``exit_plan_mode {plan}``: plan mode's way out. The model proposes its plan (Markdown) and the
person decides: approve it and let edits run without asking, approve it and be asked for each
edit, or send the model back to planning, maybe with a note.

It is offered only while the mode is ``plan`` (``Tool.planning_only``: the registry leaves it out
of every other request) and a call in another mode is refused in one line. It changes nothing
itself: the face asks the person (``ToolContext.plan_approval``) and the runtime sets the mode
the answer names. Nobody can be asked in print mode (``plan_approval`` None): the plan is the
turn's answer, printed for the person, and the run ends there (``ToolResult.ends_run``), nothing
changed on disk. The plan stays in the conversation either way: the call's input holds it and its
result says what became of it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from app.agent.tools.base import PlanAnswer, ResultView, ToolContext, ToolError, ToolInput, ToolResult
from app.agent.tools.fields import FilledText, refuse
from app.agent.tools.tool import Preview, Tool, ToolKind
from memory.text.lines import one_line
from memory.text.terminal import strip_terminal

__all__ = [
    "APPROVED_ASKING",
    "APPROVED_EDITS",
    "KEPT_PLANNING",
    "MAX_PLAN_CHARS",
    "NOTE_MAX_CHARS",
    "NOT_PLANNING",
    "PRINTED",
    "ExitPlanMode",
    "ExitPlanModeInput",
]

MAX_PLAN_CHARS = 50_000
NOTE_MAX_CHARS = 300  # the person's note for the model: one line, bounded

APPROVED_EDITS = "The user approved the plan; edits now run without asking. Go on with the work."
APPROVED_ASKING = (
    "The user approved the plan; each edit will ask the user for permission. Go on with the work."
)
KEPT_PLANNING = (
    "The user did not approve the plan; keep planning (plan mode goes on: only read-only tools run) "
    "and propose a revised plan with exit_plan_mode."
)
PRINTED = (
    "The plan was printed for the user, who reads it outside this conversation; this run ends here "
    "and nothing was changed."
)
NOT_PLANNING = (
    "exit_plan_mode is only for plan mode, and the mode is not plan now: there is no plan to approve; "
    "go on with the work"
)

# How the chat shows the call's result, by the person's answer (the plan itself below it).
_SHOWN: dict[str, str] = {
    "accept-edits": "approved: edits run without asking",
    "default": "approved: each edit asks",
    "keep-planning": "not approved: planning goes on",
}


def _plan(value: str) -> str:
    if not value.strip():
        raise refuse("input 'plan' must hold the plan, not only spaces")
    if len(value) > MAX_PLAN_CHARS:
        raise refuse(
            f"input 'plan' is {len(value):,} characters long; at most {MAX_PLAN_CHARS:,}: "
            "give the steps, not the code"
        )
    return value


class ExitPlanModeInput(ToolInput):
    plan: Annotated[FilledText, AfterValidator(_plan)] = Field(
        description=(
            "The plan, in Markdown: the steps you will take, the files you will change and how, "
            f"and how you will check the result (at most {MAX_PLAN_CHARS:,} characters)."
        )
    )


class ExitPlanMode(Tool[ExitPlanModeInput]):
    name = "exit_plan_mode"
    Input = ExitPlanModeInput
    # It talks to the person and changes nothing itself (the mode changes by their answer).
    kind = ToolKind.INTERACTION
    planning_only = True
    aliases = ("ExitPlanMode",)
    offloads = False  # its result is a line or two; the plan is in its input
    description = (
        "You are in plan mode while this tool is offered: the user wants to see a plan before "
        "anything changes, so only read-only tools run (edits, commands and web calls are refused). "
        "Read what you need, then present your plan with this tool for the user's approval. Use it "
        "when you know the steps of an implementation, not for a question or research alone "
        "(answer those directly). Write the plan in Markdown: concise steps, the files to change, "
        "how to verify. The user approves it (you then leave plan mode and carry it out; edits may "
        "then run without asking) or tells you to keep planning, maybe saying why."
    )

    async def run(self, args: ExitPlanModeInput, ctx: ToolContext) -> ToolResult:
        if ctx.planning is None or not ctx.planning():
            raise ToolError(NOT_PLANNING)
        if ctx.plan_approval is None:
            shown = ResultView(status="printed for the user", output=args.plan, failed=False)
            return ToolResult(content=PRINTED, view=shown, ends_run=args.plan)
        answer = await ctx.plan_approval(args.plan)
        view = ResultView(status=_SHOWN[answer.choice], output=args.plan, failed=False)
        return ToolResult(content=_result(answer), view=view)

    def preview(self, args: ExitPlanModeInput, ctx: ToolContext) -> Preview:
        return Preview(summary="the plan", body=strip_terminal(args.plan), kind="text")


def _result(answer: PlanAnswer) -> str:
    """What the model is told of the person's answer."""
    if answer.choice == "accept-edits":
        return APPROVED_EDITS
    if answer.choice == "default":
        return APPROVED_ASKING
    note = one_line(answer.note, NOTE_MAX_CHARS)
    return f"{KEPT_PLANNING} The user said: {note}" if note else KEPT_PLANNING

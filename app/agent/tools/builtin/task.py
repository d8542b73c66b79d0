"""``task {description, prompt}``: a sub-agent with the read-only tools and a fresh conversation.

The runner gives the call its sub-agent (``ToolContext.subagent``): a tool does not start Runs."""

from __future__ import annotations

from pydantic import Field

from app.agent.tools.base import ToolContext, ToolError, ToolInput, ToolResult
from app.agent.tools.fields import FilledText
from app.agent.tools.tool import Tool, ToolKind


class TaskInput(ToolInput):
    description: FilledText = Field(description="A short (3-6 words) label for the task, shown to the user.")
    prompt: FilledText = Field(description="The complete, self-contained instructions for the sub-agent.")


class Task(Tool[TaskInput]):
    name = "task"
    Input = TaskInput
    # It changes nothing itself and asks no one, but a sub-agent never starts another: not read-only.
    kind = ToolKind.INTERACTION
    display = (("description", "{}"),)
    aliases = ("Task",)
    description = (
        "Start a sub-agent to do a self-contained research task over the workspace, such as "
        "finding where something is implemented or summarising how a module works. It starts "
        "with a fresh conversation (it does not see this one), can only use the read-only tools "
        "(read_file, list_files, grep, read_memory, search_memory, read_result), and returns its final "
        "answer as the result. "
        "Write `prompt` so it stands alone: say exactly what to find and what to report back."
    )

    async def run(self, args: TaskInput, ctx: ToolContext) -> ToolResult:
        if ctx.subagent is None:
            raise ToolError("task is run by the runner as a sub-agent, not by run_tool")
        if not args.prompt.strip():
            raise ToolError("task needs a non-empty 'prompt'")
        return await ctx.subagent(args.prompt)

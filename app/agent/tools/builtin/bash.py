"""``bash {command, timeout?}``: a shell command in the workspace, bounded in time and output."""

from __future__ import annotations

import asyncio
from typing import Annotated

from pydantic import AfterValidator, Field

from app.agent.tools.base import ToolContext, ToolInput, ToolResult
from app.agent.tools.fields import FilledText, PositiveNumber, refuse
from app.agent.tools.shell import run_bash
from app.agent.tools.tool import Preview, RuleTarget, Tool, ToolKind
from memory.text.terminal import strip_terminal


def _command(value: str) -> str:
    if "\x00" in value:
        raise refuse("command contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise refuse("command is not valid UTF-8 text (it holds a lone surrogate)") from None
    return value


class BashInput(ToolInput):
    command: Annotated[FilledText, AfterValidator(_command)] = Field(description="The command line to run.")
    timeout: PositiveNumber | None = Field(None, description="Timeout in seconds (default 120, at most 600).")


class Bash(Tool[BashInput]):
    name = "bash"
    Input = BashInput
    kind = ToolKind.EXECUTE
    display = (("command", "{}"),)
    aliases = ("Bash",)
    rule_kind = "command"
    description = (
        "Run a shell command with `bash -c` in the workspace root, without a terminal and with no "
        "input (stdin is empty: interactive programs and prompts will not work; pass flags such as "
        "`--yes` or `--no-pager`). Returns the exit code, stdout and stderr; long output keeps its "
        "beginning and end. `timeout` is in seconds (default 120, at most 600); on timeout the "
        "command and every process it started are killed. Each call runs in a fresh shell: `cd` "
        "and variables do not carry over. Background processes that keep the output open are "
        "stopped when the command ends; redirect their output to a file to keep one running. "
        "Prefer read_file, list_files and grep for reading and searching files. May need the "
        "user's permission."
    )

    async def run(self, args: BashInput, ctx: ToolContext) -> ToolResult:
        if ctx.checkpoints is not None:  # what bash changes is not checkpointed: the turn says it ran
            await asyncio.to_thread(ctx.checkpoints.ran_bash)
        return await run_bash(ctx, args.command, args.timeout)

    def preview(self, args: BashInput, ctx: ToolContext) -> Preview:
        return Preview(
            summary="run a shell command in the workspace", body=strip_terminal(args.command), kind="command"
        )

    def rule_target(self, args: BashInput) -> RuleTarget:
        return RuleTarget.command(args.command)

"""A prompt that names a command, in print mode (``pseudoclaude -p "/name args"``).

What names a command is the custom commands' rule (``parse_invocation``): ``/`` and a name of
letters, digits, ``_ - . :`` followed by whitespace or the end. A first word holding a further
``/`` is a path and the prompt is sent as written (``/etc/hosts is odd, why?``), as is one that
starts with ``//``. A prompt that names a command:

- ``/help`` (words after it are ignored, as in the app) prints the commands to stdout: ``/help``,
  the custom commands and MCP prompts with their descriptions, the broken ones with why, the
  project's that wait for trust, and where the app's other commands are from a shell. Nothing is
  sent to the model and no session is opened.
- a custom command or an MCP prompt becomes the prompt;
- any other name (unknown, a broken file, a project command waiting for trust, one of the app's
  own commands) is a usage error: one line on stderr naming it and why, exit 2, nothing sent.

It is decided before the session opens (a usage error leaves none and runs no ``SessionStart``
hook); a custom command's ``allowed-tools`` and ``model`` apply once it is open.

The prompt's ``@path`` files and images (a custom command's text's too) and the ``--image`` files
are read before the session opens as well: an image that cannot be sent (not a readable image,
over 50 MB, missing) is one line on stderr and a usage error, exit 2, nothing sent and no session.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from app.agent.conversation.attachments import read_image, with_attachments
from app.agent.conversation.blocks import Prompt
from app.agent.conversation.images import ImageError, Picture
from app.agent.extensions.custom_commands import CustomCommand, expand, parse_invocation
from app.agent.extensions.extensions import APP_COMMANDS
from app.agent.extensions.mcp import McpError
from app.services.extensions import ExtensionsService
from memory.text.lines import one_line
from memory.text.terminal import strip_terminal

if TYPE_CHECKING:
    from app.agent.runtime import Runtime

__all__ = [
    "EXIT_USAGE",
    "PromptCommand",
    "apply_command",
    "asks_for_help",
    "prompt_with_attachments",
    "resolve_prompt",
]

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
DESCRIPTION_CHARS = 100

# The app's other commands, and what does their work from a shell.
FROM_A_SHELL: dict[str, str] = {
    "clear": "each -p run without --continue or --resume is a new session",
    "resume": "--continue, or --resume ID",
    "compact": "--compact (with --continue or --resume)",
    "model": "--model NAME",
    "mode": "--memory auto|review|off",
    "rewind": "pseudoclaude rewind --list, then pseudoclaude rewind N",
    "memory": "pseudoclaude memory list | show | search",
    "pending": "pseudoclaude memory pending, approve, reject",
    "undo": "pseudoclaude memory undo",
    "consolidate": "pseudoclaude memory consolidate",
    "permissions": "--allow-tools RULE,… (the settings files' rules apply as in the app)",
    "cost": "the [done; usage: …] line on stderr",
}


class _UI(Protocol):
    def diag(self, text: str) -> None: ...

    def output(self, text: str) -> None: ...


@dataclass(frozen=True)
class PromptCommand:
    """What the prompt asks of the run: ``text`` to send, or nothing (None) and ``code`` to exit
    with. ``command``: the custom command it names; ``shown``: the command, as said on stderr."""

    text: str | None
    code: int = EXIT_OK
    command: CustomCommand | None = None
    shown: str = ""


def asks_for_help(prompt: str) -> bool:
    """Whether the prompt is ``/help``: it needs no model, so no credentials either."""
    invoked = parse_invocation(prompt)
    return invoked is not None and invoked[0].casefold() == "help"


async def resolve_prompt(ui: _UI, runtime: Runtime, prompt: str) -> PromptCommand:
    """The prompt as the run uses it. Starts the runtime first (as print mode does, without the
    memory worker: idempotent), which reads the commands and starts the servers; an MCP prompt
    waits for them to be ready."""
    await runtime.start(worker=False)
    invoked = parse_invocation(prompt)
    if invoked is None:
        return PromptCommand(prompt)
    name, arguments = invoked
    if name.casefold() == "help":
        await runtime.ext.wait_ready()  # their prompts are listed too
        ui.output(help_text(runtime))
        return PromptCommand(None)
    command = runtime.ext.commands.find(name)
    if command is not None:
        return PromptCommand(expand(command, arguments), command=command, shown=f"/{command.name}")
    if runtime.ext.mcp is not None:
        await runtime.ext.wait_ready()
        try:
            expanded = await ExtensionsService(runtime).mcp_prompt(name, arguments)
        except (TimeoutError, McpError) as e:
            ui.diag(f"pseudoclaude: /{one_line(name, 60)}: {one_line(str(e), 300)}")
            return PromptCommand(None, EXIT_ERROR)
        if expanded is not None:
            return PromptCommand(expanded.prompt, shown=expanded.name)
    ui.diag(f"pseudoclaude: {why_not(runtime, name)}; nothing was sent")
    return PromptCommand(None, EXIT_USAGE)


def why_not(runtime: Runtime, name: str) -> str:
    """Why ``/name`` does not run in print mode, in one line."""
    catalog, shown = runtime.ext.commands, f"/{one_line(name, 60)}"
    broken = catalog.broken_named(name)
    if broken is not None:
        return f"{shown} is a broken custom command ({broken.path}): {broken.why}"
    if any(w.casefold() == name.casefold() for w in catalog.waiting):
        return (
            f"{shown} is a command of this project that waits for your trust: open pseudoclaude in this "
            "workspace and trust it first"
        )
    if name.casefold() in APP_COMMANDS:
        hint = FROM_A_SHELL.get(name.casefold())
        return f"{shown} is a command of the app" + (
            f"; from a shell: {hint}" if hint else ", not of print mode"
        )
    return (
        f"unknown command {shown} (pseudoclaude -p /help lists the commands; to start a prompt with a "
        'path, give it a second "/": /tmp/ or //tmp)'
    )


def help_text(runtime: Runtime) -> str:
    """``-p /help``: what print mode runs, what is broken or waits, and the app's other commands."""
    service = ExtensionsService(runtime)
    custom = {f"/{c.name}" for c in runtime.ext.commands.commands}
    commands = service.commands()
    rows = [("/help", "this list")]
    rows += [(f"{c.name} {c.hint}".rstrip(), c.description) for c in commands if c.name in custom]
    sections = [('Commands for print mode (pseudoclaude -p "/NAME ARGS"):', rows)]
    prompts = [(f"{c.name} {c.hint}".rstrip(), c.description) for c in commands if c.name not in custom]
    if prompts:
        sections.append(("MCP prompts:", prompts))
    broken = [(f"/{b.name}" if b.name else b.path, b.why) for b in service.broken()]
    if broken:
        sections.append(("Broken custom commands (not run):", broken))
    waiting = runtime.ext.commands.waiting
    if waiting:
        sections.append(
            (
                "The project's commands, waiting for your trust (open pseudoclaude here to trust them):",
                [(f"/{w}", "") for w in waiting],
            )
        )
    sections.append(
        ("The app's other commands, from a shell:", [(f"/{k}", v) for k, v in FROM_A_SHELL.items()])
    )
    lines: list[str] = []
    for title, section in sections:
        width = min(32, max(len(left) for left, _ in section))
        lines += ["", title] if lines else [title]
        lines += [
            f"  {one_line(left, 60):<{width}}  {one_line(right, DESCRIPTION_CHARS)}".rstrip()
            for left, right in section
        ]
    return strip_terminal("\n".join(lines)) + "\n"


async def prompt_with_attachments(
    ui: _UI, runtime: Runtime, resolved: PromptCommand, images: Sequence[str] = ()
) -> Prompt | None:
    """The prompt to send: its words, the files and images its ``@path`` words name (as the
    app's prompt attaches them) and the ``--image`` files (``images``, as given: relative to the
    current folder, anywhere on disk; labelled by their file's name), numbered after them. None,
    said in one line, when an image cannot be sent."""
    try:
        extra: list[Picture] = []
        for given in images:
            try:
                picture = await read_image(os.path.abspath(given), given)
            except ImageError as e:
                raise ImageError(f"--image {e}") from None
            # Labelled by its file's name, as a pasted path's image is: the folders are the person's.
            name = strip_terminal(os.path.basename(given), keep_newlines=False)
            extra.append(replace(picture, name=name or picture.name))
        prompt, notes = await with_attachments(
            resolved.text or "", runtime.workspace, frozenset(), extra=extra
        )
    except ImageError as e:
        ui.diag(f"pseudoclaude: {one_line(e, 400)}; nothing was sent")
        return None
    for note in notes:  # a file cut or refused, an image scaled
        ui.diag(f"pseudoclaude: {note}")
    return prompt


def apply_command(ui: _UI, runtime: Runtime, resolved: PromptCommand) -> None:
    """The session is open: a custom command's ``allowed-tools`` hold for this run, its
    ``model`` for this turn."""
    command = resolved.command
    if resolved.shown:
        ui.diag(f"[command {resolved.shown}]")
    if command is None:
        return
    if command.allowed_tools:
        runtime.ext.allow(command.allowed_tools, f"/{command.name} allowed-tools")
    if command.model:
        runtime.runner.model = command.model

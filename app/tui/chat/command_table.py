"""The slash commands as typed: their table (names, usage, help), what each needs before it can
run, parsing, the completion list and /help's text. Plain functions, tested without a terminal;
the handlers are ``SlashCommands`` (app.tui.chat.slash_commands)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from memory.constants import MEMORY_MODES


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str


COMMANDS: tuple[Command, ...] = (
    Command("help", "/help", "list the commands and keys"),
    Command("clear", "/clear", "start a new session (memory is kept)"),
    Command("memory", "/memory", "browse and edit the memory cards"),
    Command("pending", "/pending", "watch and review the pending memory updates"),
    Command("remember", "/remember TEXT", "open the card editor with TEXT (Ctrl+S saves)"),
    Command("undo", "/undo", "revert the last memory batch"),
    Command(
        "consolidate",
        "/consolidate [LEVEL]",
        "merge duplicate cards (both levels, or LEVEL); review in /pending",
    ),
    Command("model", "/model NAME", "switch the main model"),
    Command("mode", f"/mode {'|'.join(MEMORY_MODES)}", "switch the memory mode"),
    Command("resume", "/resume", "pick a session of this workspace to resume"),
    Command("cost", "/cost", "show this session's tokens and cost"),
    Command("todos", "/todos", "show the session's whole to-do list"),
    Command("compact", "/compact [FOCUS]", "compact the conversation now (automatic near the context limit)"),
    Command("rewind", "/rewind", "files and/or the conversation back to before a turn"),
    Command("permissions", "/permissions", "the permission rules and their files; /permissions remove RULE"),
    Command("mcp", "/mcp", "list the MCP servers: state, tools, prompts; /mcp restart NAME"),
    Command("quit", "/quit", "quit (pending memory is saved first)"),
)
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}

# What a command needs before it can run. None of these needs a model: the memory stores are
# reachable a moment after the first frame (the runtime object, before the SDK is loaded), and
# a command typed earlier runs then. The session commands wait, in order with the queued prompts,
# until the runtime is open. The rest (/help, /cost, /quit) run at once.
NEEDS_STORES = frozenset({"memory", "pending", "remember", "undo", "mode", "model", "consolidate"})
NEEDS_SESSION = frozenset({"clear", "resume", "compact", "rewind", "todos"})

KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send"),
    ("Shift+Enter, Ctrl+J", "newline"),
    ("Up, Down", "prompt history"),
    ("PageUp, PageDown", "scroll the chat (from the prompt too)"),
    ("Ctrl+Home, Ctrl+End", "the chat's top, its bottom"),
    ("Esc, Ctrl+C", "cancel the turn (Ctrl+C copies a selection)"),
    ("Esc Esc", "on an empty prompt, nothing running or queued: /rewind"),
    ("F2", "show or hide the memory panel"),
    ("Tab", "on an empty prompt: thinking on/off; with text: the memory panel"),
    ("Ctrl+O", "show or hide the model's thinking"),
    ("Shift+Tab", "permission mode: default → accept edits → plan"),
    ("Ctrl+Q", "quit (twice: at once)"),
    ("@path", "attach a file; @shot.png an image (png, jpg, gif, webp)"),
    ("Ctrl+V", "paste an image from the clipboard"),
    ("an image path", "pasted (a dragged file): attached as [Image #1: name W×H]"),
    # A row with no key goes on with the one above: no row wraps in a chat 100 columns wide.
    ("a large paste", "collapsed to [pasted 3,000 lines, 195.3 KiB], sent whole"),
    ("", "Enter or a click on it in the chat expands it"),
    ("in /pending", "Enter expand · a approve · r reject · t retry · x dismiss · Esc back"),
    ("in /memory", "/ filter · 1-4 type · 0 all · l level · s stale only · Esc back"),
    ("", "i in/not in prompt · r sort: name/use"),
    ("on a card", "n new · e/Enter edit · p pin · c still true · d delete · m move"),
    ("", "o $EDITOR · v raw/rendered · u undo"),
    ("in the editor", "Ctrl+S save · Esc cancel"),
    ("in /rewind", "Enter pick a turn · b files and conversation · f files"),
    ("", "c conversation · m undo its memory batches · Esc back"),
)


@dataclass(frozen=True)
class Parsed:
    """A slash command as typed. ``command`` is None for an unknown name."""

    name: str
    arg: str
    command: Command | None


def parse(text: str) -> Parsed | None:
    """``/name args`` → Parsed; None when the text is not a command (a message to send).

    ``//text`` and a lone ``/`` are messages, so a path such as ``/etc/hosts …`` typed as the start
    of a sentence is still a command only when its first word names one or looks like one."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//") or stripped == "/":
        return None
    head, _, rest = stripped[1:].partition(" ")
    if "/" in head:  # "/usr/bin is where…": a path, not a command
        return None
    name = head.split("\n", 1)[0].lower()
    rest = (stripped[1 + len(head) :]).strip() if "\n" in head else rest.strip()
    return Parsed(name=name, arg=rest, command=BY_NAME.get(name))


def completions(prefix: str) -> list[Command]:
    """Commands whose name starts with ``prefix`` (without the slash), in table order."""
    p = prefix.lstrip("/").lower()
    return [c for c in COMMANDS if c.name.startswith(p)]


def help_rows(custom: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """(what to type, what it does) for each command, the custom ones (``custom``) after a blank
    row, a blank row, then the keys."""
    extra = [("", ""), *custom] if custom else []
    return [*((c.usage, c.help) for c in COMMANDS), *extra, ("", ""), *KEYS]


def help_text(custom: list[tuple[str, str]] | None = None) -> str:
    """/help as plain text (the block's ``text``; what tests and copies read)."""
    return "\n".join(f"{left}  {right}".rstrip() for left, right in help_rows(custom))


def help_table(custom: list[tuple[str, str]] | None = None) -> Table:
    """/help as drawn: two columns, so a wrapped description stays under its own column (a
    hanging indent) at any chat width instead of running back under the command names."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for left, right in help_rows(custom):
        # Text, not markup: "[pasted …]" would be read as a style tag and vanish.
        table.add_row(Text(left), Text(right))
    return table

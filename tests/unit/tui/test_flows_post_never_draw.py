"""The App's flows and the memory screens' controller never draw: what they have to say is a
posted message (``ChatNote``, ``PromptBack``, …) that the chat draws, and each flow is built from
the few things it uses, so it runs here with a recorder for its messages and no App, no chat.

The rule is also read from the source: no module of app/tui/flows or app/tui/screens reaches
the chat pane or the prompt widget, or takes the whole App as a host Protocol."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any, cast

from textual.message import Message

from app.services.extensions import McpServerView, RuleView
from app.tui.flows.extension_commands import ExtensionCommands
from app.tui.flows.rewind_flow import RewindFlow
from app.tui.messages import ChatNote
from app.tui.phase import Phase
from app.tui.screens.memory import MemoryScreens

ROOT = Path(__file__).resolve().parents[3]
FLOW_PACKAGES = ("app/tui/flows", "app/tui/screens")
# The chat pane's and the prompt's drawing calls: the chat screen's alone.
DRAWING_CALLS = frozenset({"add_note", "add_error", "add_user", "clear_blocks", "move_cursor"})
# The App's widgets, as a flow holding the App (or a host standing for it) would reach them.
APP_WIDGETS = frozenset({"chat", "prompt", "panel"})
APPS = frozenset({"host", "_host", "app", "_app", "self"})


class NoApp:
    """Stands where Textual's App would: any use of it fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the flow used the App's {name!r}")


class Recorder:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    def __call__(self, message: Message) -> bool:
        self.messages.append(message)
        return True

    def notes(self) -> list[tuple[str, bool]]:
        return [(m.text, m.error) for m in self.messages if isinstance(m, ChatNote)]


class FakeExtensions:
    """The extensions service as /permissions and /mcp read it."""

    def __init__(self, rules: list[RuleView], servers: list[McpServerView]) -> None:
        self._rules, self._servers = rules, servers
        self.removed: list[str] = []

    def rules(self) -> list[RuleView]:
        return self._rules

    def servers(self) -> list[McpServerView]:
        return self._servers

    async def remove_rule(self, text: str) -> str:
        self.removed.append(text)
        return f"removed {text} from .PseudoClaude/settings.local.toml"

    def cannot_restart(self, name: str) -> str | None:
        return f"no MCP server named {name!r}"


def _extension_commands(service: FakeExtensions | None, post: Recorder) -> ExtensionCommands:
    def submit(text: str, typed: str, pastes: dict[str, str]) -> None:
        raise AssertionError("nothing is sent here")

    return ExtensionCommands(
        cast(Any, NoApp()),
        post=post,
        service=lambda: cast(Any, service),
        phase=lambda: Phase.READY,
        trust_pending=lambda: False,
        submit=submit,
    )


def test_permissions_and_mcp_say_every_line_as_a_posted_note_with_no_app_or_chat() -> None:
    post = Recorder()
    rule = RuleView("bash(npm test)", "allow", ".PseudoClaude/settings.local.toml", "local", "active", True)
    broken = McpServerView("docs", "project", "npx docs", "failed", "exited with 1", (), ())
    service = FakeExtensions([rule], [broken])
    ext = _extension_commands(service, post)

    asyncio.run(ext.permissions(""))
    asyncio.run(ext.permissions("remove bash(npm test)"))
    asyncio.run(ext.permissions("nonsense"))
    asyncio.run(ext.mcp(""))
    asyncio.run(ext.mcp("restart nope"))

    notes = post.notes()
    assert [error for _, error in notes] == [False] * 5
    assert notes[0][0].splitlines() == [
        "allow bash(npm test) — .PseudoClaude/settings.local.toml",  # one line each: spaces folded
        "/permissions remove RULE removes one from your own files",
    ]
    assert notes[1][0] == "removed bash(npm test) from .PseudoClaude/settings.local.toml"
    assert notes[2][0] == "usage: /permissions, or /permissions remove RULE"
    assert notes[3][0].splitlines() == [
        "docs (project) — failed: exited with 1 — npx docs",
        "/mcp restart NAME starts one again",
    ]
    assert notes[4][0] == "no MCP server named 'nope'"
    assert service.removed == ["bash(npm test)"]


def test_before_the_runtime_the_extension_commands_and_rewind_say_why_as_notes() -> None:
    post = Recorder()
    ext = _extension_commands(None, post)
    asyncio.run(ext.permissions(""))
    asyncio.run(ext.mcp(""))
    rewind = RewindFlow(
        cast(Any, NoApp()),
        post=post,
        services=lambda: None,
        turn_running=lambda: False,
        switching=asyncio.Lock(),
        start_notes=lambda: None,
        memory_changed=lambda: None,
    )
    rewind.open()
    assert post.notes() == [
        ("the rules are read once the runtime is open", False),
        ("the MCP servers are read once the runtime is open", False),
        ("/rewind is not available yet: the session is not open (see the note above)", False),
    ]


def test_the_memory_screens_say_an_outcome_in_the_chat_by_a_message_when_no_screen_is_open() -> None:
    post = Recorder()
    screens = MemoryScreens(cast(Any, NoApp()), post=post, services=lambda: None, refresh_panel=lambda: None)
    screens.say("saved project card tabs.md")
    screens.flash("not deleted: gone", error=True)
    assert post.notes() == [("saved project card tabs.md", False), ("not deleted: gone", True)]


def _modules() -> list[Path]:
    return sorted(p for package in FLOW_PACKAGES for p in (ROOT / package).rglob("*.py"))


def _owner(node: ast.Attribute) -> str:
    owner = node.value
    if isinstance(owner, ast.Name):
        return owner.id
    return owner.attr if isinstance(owner, ast.Attribute) else ""


def test_no_flow_or_memory_screen_module_reaches_the_chat_pane_or_the_prompt_widget() -> None:
    found = []
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in APP_WIDGETS and _owner(node) in APPS:
                found.append(f"{rel}:{node.lineno}: {_owner(node)}.{node.attr}")
            if isinstance(node, ast.Attribute) and node.attr in DRAWING_CALLS:
                found.append(f"{rel}:{node.lineno}: .{node.attr}(…)")
    assert not found, "a flow draws; post a message instead:\n" + "\n".join(found)


def test_no_flow_takes_the_app_as_a_host_protocol() -> None:
    found = []
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "app.tui.host":
                found.append(f"{rel}:{node.lineno}: imports app.tui.host")
            if isinstance(node, ast.ClassDef) and node.name.endswith("Host"):
                found.append(f"{rel}:{node.lineno}: class {node.name}")
    assert not found, "\n".join(found)

"""The permission modes in the one gate: plan refuses every tool that is not plan-safe with its one
line and asks nobody (whatever allows it), accept-edits lets a write inside the workspace run when
only the tool's default asked (an ask rule still asks, the configuration files still ask, bash, the
network and MCP tools follow the rules), a deny rule wins in every mode; the mode is read at each
call; Shift+Tab's order; which mode a run starts in."""

from __future__ import annotations

import os
from pathlib import Path
from typing import get_args

import pytest

from app.agent.config.settings import PermissionModeName, load_settings
from app.agent.permissions.gate import Gate, PermissionDecision, RunAllowances, plan_reason
from app.agent.permissions.modes import PermissionMode, configured_mode
from app.agent.permissions.question import Answer, Question
from app.agent.permissions.rules import ListName, PermissionRules, parse_rule
from app.agent.tools import BUILTIN_TOOLS, ToolContext
from app.agent.tools.base import ToolInput, ToolResult
from app.agent.tools.fields import FilledText
from app.agent.tools.tool import AnyTool, Tool, ToolKind

PLAN, ACCEPT, DEFAULT = PermissionMode.PLAN, PermissionMode.ACCEPT_EDITS, PermissionMode.DEFAULT


class Person:
    """The face's window: records each question and answers ``choice``."""

    def __init__(self, choice: str = "once") -> None:
        self.asked: list[str] = []
        self.choice = choice

    async def __call__(self, question: Question) -> Answer:
        self.asked.append(question.tool)
        return Answer(choice=self.choice)  # type: ignore[arg-type]  # one of the Choice literals


class PathInput(ToolInput):
    path: FilledText


class McpWrite(Tool[PathInput]):
    """An MCP server's tool that writes a workspace file: an MCP tool, whatever it touches."""

    name = "mcp__demo__save"
    description = "save"
    Input = PathInput
    kind = ToolKind.EXECUTE

    async def run(self, args: PathInput, ctx: ToolContext) -> ToolResult:
        return ToolResult(content="saved")

    def paths(self, args: PathInput) -> list[str]:
        return [args.path]


def _tool(name: str) -> AnyTool:
    tool = BUILTIN_TOOLS.get(name)
    assert tool is not None, name
    return tool


def _gate(ws: Path, mode: PermissionMode, *rules: tuple[ListName, str], person: Person | None = None) -> Gate:
    listed = PermissionRules(workspace=ws)
    for list_name, text in rules:
        listed = listed.with_rules(
            (parse_rule(text),), scope="user", source="config.toml", list_name=list_name
        )
    return Gate(listed, ask=person, permission_mode=mode)


async def _decide(gate: Gate, ws: Path, tool: AnyTool, **inp: object) -> PermissionDecision:
    return await gate.decide(tool, tool.parse(inp), ctx=ToolContext(workspace=ws))


EDIT = {"path": "src/app.py", "old_string": "a", "new_string": "b"}


# -- plan -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "inp"),
    [
        ("edit_file", EDIT),
        ("write_file", {"path": "new.txt", "content": "x"}),
        ("bash", {"command": "ls"}),
        ("web_fetch", {"url": "https://docs.python.org/3/"}),
        ("web_search", {"query": "textual"}),
    ],
)
async def test_plan_refuses_each_tool_that_changes_things_with_one_line_and_asks_nobody(
    ws: Path, name: str, inp: dict[str, object]
) -> None:
    person = Person()
    gate = _gate(ws, PLAN, person=person)
    tool = _tool(name)
    assert not gate.will_ask(tool, tool.parse(inp))  # the call never shows as waiting
    decision = await _decide(gate, ws, tool, **inp)
    assert decision == PermissionDecision(
        False,
        f"plan mode: {name} changes things and does not run while planning; "
        "propose the plan with exit_plan_mode",
    )
    assert person.asked == []


async def test_plan_refuses_what_a_rule_an_allowance_or_a_session_answer_would_allow(ws: Path) -> None:
    gate = _gate(ws, PLAN, ("allow", "edit_file"), ("allow", "bash"))
    gate.allowances = RunAllowances(allowed=frozenset({"write_file"}))
    gate.session_allowed.add("mcp__demo__save")
    for tool, inp in (
        (_tool("edit_file"), EDIT),
        (_tool("bash"), {"command": "ls"}),
        (_tool("write_file"), {"path": "a", "content": ""}),
        (McpWrite(), {"path": "a"}),
    ):
        assert await _decide(gate, ws, tool, **inp) == PermissionDecision(False, plan_reason(tool.name))


async def test_plan_runs_the_read_only_tools_and_those_that_only_talk(ws: Path) -> None:
    person = Person()
    gate = _gate(ws, PLAN, person=person)
    for name, inp in (
        ("read_file", {"path": "README.md"}),
        ("list_files", {}),
        ("grep", {"pattern": "x"}),
        ("read_memory", {"level": "user", "filename": "a.md"}),
        ("search_memory", {"query": "deploy"}),
        ("read_result", {"id": "r1"}),
        ("task", {"description": "d", "prompt": "p"}),
    ):
        assert await _decide(gate, ws, _tool(name), **inp) == PermissionDecision(True), name
    assert person.asked == []
    # The way out of plan mode runs in it: it changes nothing itself, it asks the person.
    assert all(t.plan_safe for t in BUILTIN_TOOLS if t.kind == ToolKind.INTERACTION)
    assert {t.name for t in BUILTIN_TOOLS if not t.plan_safe} == {
        "write_file",
        "edit_file",
        "bash",
        "web_fetch",
        "web_search",
    }


async def test_a_deny_rule_wins_in_plan_mode_too(ws: Path) -> None:
    gate = _gate(ws, PLAN, ("deny", "read_file(.env)"), ("deny", "bash"))
    read = await _decide(gate, ws, _tool("read_file"), path=".env")
    assert not read.allowed and read.reason.startswith("read_file was denied by the rule read_file(.env)")
    bash = await _decide(gate, ws, _tool("bash"), command="ls")
    assert bash.reason.startswith("bash was denied by the rule bash in ")


# -- accept-edits ---------------------------------------------------------------------------------


async def test_accept_edits_runs_writes_inside_the_workspace_without_asking(ws: Path) -> None:
    person = Person()
    gate = _gate(ws, ACCEPT, person=person)
    edit, write = _tool("edit_file"), _tool("write_file")
    assert not gate.will_ask(edit, edit.parse(EDIT))
    assert await _decide(gate, ws, edit, **EDIT) == PermissionDecision(True)
    assert await _decide(gate, ws, write, path="docs/new.md", content="x") == PermissionDecision(True)
    assert await _decide(gate, ws, write, path=str(ws / "abs.txt"), content="x") == PermissionDecision(True)
    assert person.asked == []
    # In default the same calls ask.
    gate.permission_mode = DEFAULT
    assert gate.will_ask(edit, edit.parse(EDIT))
    await _decide(gate, ws, edit, **EDIT)
    assert person.asked == ["edit_file"]


@pytest.mark.parametrize(
    "path",
    [
        "../elsewhere.txt",
        "/etc/hosts",
        ".PseudoClaude/settings.local.toml",
        ".pseudoclaude/commands/deploy.md",
        ".mcp.json",
        ".claude/settings.json",
        "link/inside.txt",  # a symlink to a folder outside
    ],
)
async def test_accept_edits_still_asks_outside_the_workspace_and_for_its_configuration(
    ws: Path, tmp_path: Path, path: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    os.symlink(outside, ws / "link")
    person = Person(choice="deny")
    gate = _gate(ws, ACCEPT, person=person)
    write = _tool("write_file")
    assert gate.will_ask(write, write.parse({"path": path, "content": "x"}))
    assert not (await _decide(gate, ws, write, path=path, content="x")).allowed
    assert person.asked == ["write_file"]


async def test_accept_edits_leaves_an_ask_rule_bash_the_network_and_mcp_tools_to_the_rules(ws: Path) -> None:
    person = Person(choice="deny")
    gate = _gate(ws, ACCEPT, ("ask", "edit_file(secrets/**)"), person=person)
    await _decide(gate, ws, _tool("edit_file"), path="secrets/key.txt", old_string="a", new_string="b")
    await _decide(gate, ws, _tool("bash"), command="ls")
    await _decide(gate, ws, _tool("web_fetch"), url="https://docs.python.org/3/")
    await _decide(gate, ws, McpWrite(), path="notes.txt")
    assert person.asked == ["edit_file", "bash", "web_fetch", "mcp__demo__save"]
    # A deny rule wins over accept-edits.
    gate = _gate(ws, ACCEPT, ("deny", "edit_file(vendor/**)"), person=person)
    denied = await _decide(gate, ws, _tool("edit_file"), path="vendor/x.py", old_string="a", new_string="b")
    assert denied.reason.startswith("edit_file was denied by the rule edit_file(vendor/**)")


async def test_accept_edits_in_print_mode_runs_the_edit_and_refuses_bash_without_a_rule(ws: Path) -> None:
    gate = _gate(ws, ACCEPT)  # no window: print mode
    assert await _decide(gate, ws, _tool("edit_file"), **EDIT) == PermissionDecision(True)
    bash = await _decide(gate, ws, _tool("bash"), command="ls")
    assert bash.reason.startswith("bash was denied: print mode runs it only when a rule")
    outside = await _decide(gate, ws, _tool("write_file"), path="../x", content="")
    assert not outside.allowed


async def test_the_mode_is_read_at_each_call(ws: Path) -> None:
    person = Person()
    gate = _gate(ws, DEFAULT, person=person)
    edit = _tool("edit_file")
    await _decide(gate, ws, edit, **EDIT)
    gate.permission_mode = PLAN
    assert not (await _decide(gate, ws, edit, **EDIT)).allowed
    gate.permission_mode = ACCEPT
    assert (await _decide(gate, ws, edit, **EDIT)).allowed
    assert person.asked == ["edit_file"]
    gate.reset()  # a new session keeps the mode
    assert gate.permission_mode == ACCEPT


# -- the modes' order and the start ---------------------------------------------------------------


def test_shift_tab_cycles_default_accept_edits_plan() -> None:
    assert [DEFAULT.next(), ACCEPT.next(), PLAN.next()] == [ACCEPT, PLAN, DEFAULT]
    # The settings' names are the modes' (the settings cannot import them).
    assert set(get_args(PermissionModeName)) == {m.value for m in PermissionMode}


def test_the_flag_then_the_environment_then_the_project_then_the_user_file(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('permission_mode = "plan"\n')
    user = load_settings()
    assert user.permission_mode == "plan" and not user.given_for_run("permission_mode")
    assert configured_mode(user, None) == PLAN
    assert configured_mode(user, ACCEPT) == ACCEPT  # the project's files beat the user's
    flag = load_settings({"permission_mode": "default"})
    assert configured_mode(flag, ACCEPT) == DEFAULT  # the flag beats every file
    monkeypatch.setenv("PSEUDOCLAUDE_PERMISSION_MODE", "accept-edits")
    env = load_settings()
    assert configured_mode(env, PLAN) == ACCEPT
    assert configured_mode(load_settings({"permission_mode": "plan"}), None) == PLAN  # flag over env
    monkeypatch.delenv("PSEUDOCLAUDE_PERMISSION_MODE")
    (isolated_home / "config.toml").unlink()
    assert configured_mode(load_settings(), None) == DEFAULT

"""Permission rules that last: parsing, deciding (bash whole commands, paths, MCP servers),
the project's allow rules waiting for trust, --allow-tools, suggestions and saving rules."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from app.agent.config.project_trust import ProjectTrust
from app.agent.permissions.edits import add_rule, gitignore_line, gitignore_line_missing, remove_rule
from app.agent.permissions.gate import Gate, PermissionDecision
from app.agent.permissions.loading import load_permission_rules
from app.agent.permissions.rules import (
    PermissionRules,
    RuleError,
    parse_rule,
    parse_rule_list,
)
from app.agent.permissions.shell_split import split_command
from app.agent.permissions.suggestions import suggest_rules
from app.agent.tools import BUILTIN_TOOLS, ToolContext
from app.agent.tools.tool import RuleTarget


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _user(home: Path, text: str) -> None:
    _write(home / "config.toml", text)


def _rules(ws: Path, home: Path, text: str = "", *, project: str = "", local: str = "") -> PermissionRules:
    if text:
        _user(home, text)
    if project:
        _write(ws / ".PseudoClaude" / "settings.toml", project)
    if local:
        _write(ws / ".PseudoClaude" / "settings.local.toml", local)
    return load_permission_rules(ws, home)


def _bash(rules: PermissionRules, command: str) -> str:
    return rules.decide("bash", RuleTarget.command(command)).decision


# -- parsing ----------------------------------------------------------------------------------


def test_rules_parse_to_tool_and_pattern() -> None:
    assert parse_rule("edit_file").tool == "edit_file"
    r = parse_rule(" bash(npm run test:*) ")
    assert (r.tool, r.pattern, r.text) == ("bash", "npm run test:*", "bash(npm run test:*)")
    assert parse_rule("mcp__github").server_wide
    assert parse_rule("mcp__github__*").tool == "mcp__github"
    assert not parse_rule("mcp__github__create_issue").server_wide
    assert parse_rule("Bash(git status:*)").tool == "bash"  # Claude Code's names are read as ours
    assert parse_rule("Edit(src/**)").tool == "edit_file"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("bash(", "ends with ')'"),
        ("frobnicate", "unknown tool 'frobnicate'"),
        ("BASH2", "unknown tool"),
        ("bash()", "empty parentheses"),
        ("bash(git status && rm x)", "one simple command"),
        ("bash(git $(x):*)", "substitution"),
        ("bash(echo > f)", "redirection"),
        ("read_memory(x)", "takes no pattern"),
        ("mcp__srv(x)", "takes no pattern"),
        ("mcp__", "mcp__SERVER"),
        ("edit_file(../x)", "'..'"),
        ("edit_file(!src)", "negated"),
        ("edit_file(~/x)", "relative to the workspace"),
    ],
)
def test_a_malformed_rule_is_refused_with_its_reason(text: str, why: str) -> None:
    with pytest.raises(RuleError, match=r"(?s).*") as err:
        parse_rule(text)
    assert why in str(err.value)
    assert "\n" not in str(err.value)


def test_a_refused_rule_names_file_and_rule_and_the_others_still_load(ws: Path, isolated_home: Path) -> None:
    rules = _rules(
        ws, isolated_home, '[permissions]\nallow = ["bash(make test)", "nope(x)", 3]\ndeny = ["bash(rm:*)"]\n'
    )
    assert [r.rule.text for r in rules.rules] == ["bash(make test)", "bash(rm:*)"]
    config = str(isolated_home / "config.toml")
    assert any(
        p.startswith(config) and "'nope(x)'" in p and "unknown tool 'nope'" in p for p in rules.problems
    )
    assert any(p.startswith(config) and "3" in p and "string" in p for p in rules.problems)
    assert all("\n" not in p for p in rules.problems)


def test_a_damaged_file_is_one_problem_and_the_other_files_still_load(ws: Path, isolated_home: Path) -> None:
    rules = _rules(ws, isolated_home, "[permissions\n", local='[permissions]\ndeny = ["bash(rm:*)"]\n')
    assert [r.rule.text for r in rules.rules] == ["bash(rm:*)"]
    assert len(rules.problems) == 1 and "invalid TOML" in rules.problems[0]


# -- bash: whole commands ---------------------------------------------------------------------


@pytest.fixture
def git_status(ws: Path, isolated_home: Path) -> PermissionRules:
    return _rules(ws, isolated_home, '[permissions]\nallow = ["bash(git status:*)", "bash(make test)"]\n')


def test_a_prefix_rule_allows_the_command_with_arguments(git_status: PermissionRules) -> None:
    assert _bash(git_status, "git status -s") == "allow"
    assert _bash(git_status, "git status") == "allow"
    assert _bash(git_status, "  g'it' status  ") == "allow"  # words compared without their quotes
    assert _bash(git_status, "git status | git status") == "allow"  # every part allowed
    assert _bash(git_status, "git log") == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "git status && rm -rf x",
        "git status; curl x",
        "git status | sh",
        "git status & rm x",
        "git status\nrm x",
        "git status $(rm x)",
        'git status "$(rm x)"',
        "git status `rm x`",
        "git status <(rm x)",
        "git status > out",
        "git status >> out",
        "git status &> out",
        "git status <<EOF\nx\nEOF",
        "git status \\\n -s",
        "git status 'unclosed",
        "git status ${X:-$(rm x)}",
        "FOO=1 git status",
    ],
)
def test_a_prefix_rule_never_allows_more_than_the_command(git_status: PermissionRules, command: str) -> None:
    decided = git_status.decide("bash", RuleTarget.command(command))
    assert decided.decision == "ask", (command, decided)


def test_a_redirection_the_rule_does_not_name_asks(git_status: PermissionRules) -> None:
    for command in ("git status 2>/dev/null", "git status >&2", "git status 2>&1", "git status < notes.txt"):
        assert _bash(git_status, command) == "ask", command


def test_an_exact_rule_is_that_command_only(git_status: PermissionRules) -> None:
    assert _bash(git_status, "make test") == "allow"
    assert _bash(git_status, "make  'test'") == "allow"
    assert _bash(git_status, "make test-all") == "ask"
    assert _bash(git_status, "make test clean") == "ask"


def test_the_prefix_is_the_text_before_the_colon_star(ws: Path, isolated_home: Path) -> None:
    rules = _rules(
        ws, isolated_home, '[permissions]\nallow = ["bash(npm run test:*)", "bash(git diff :*)"]\n'
    )
    assert _bash(rules, "npm run test:unit") == "allow"  # as Claude Code: the last word may go on
    assert _bash(rules, "npm run test -- --watch") == "allow"
    assert _bash(rules, "npm run build") == "ask"
    assert _bash(rules, "git diff HEAD") == "allow"
    assert _bash(rules, "git diff-tree HEAD") == "ask"  # a space before :* asks for whole words


def test_deny_wins_over_ask_over_allow_and_any_denied_part_denies(ws: Path, isolated_home: Path) -> None:
    rules = _rules(
        ws,
        isolated_home,
        '[permissions]\nallow = ["bash", "edit_file"]\nask = ["bash(git push:*)"]\n'
        'deny = ["bash(rm:*)", "edit_file(secrets/**)"]\n',
    )
    assert _bash(rules, "ls") == "allow"
    assert _bash(rules, "git push origin") == "ask"
    decided = rules.decide("bash", RuleTarget.command("ls && rm -rf x"))
    assert decided.decision == "deny"
    assert "bash(rm:*)" in decided.reason and str(isolated_home / "config.toml") in decided.reason
    assert _bash(rules, "git push; rm x") == "deny"
    assert _bash(rules, "if rm -rf x; then :; fi") == "deny"  # reserved words introduce the command
    assert _bash(rules, "rm x $(true)") == "deny"  # a part seen beside a substitution still counts
    assert _bash(rules, "FOO=1 rm -rf x") == "deny"  # a deny looks past leading assignments
    # A bare allow cannot vouch for what the splitter cannot see while deny patterns exist.
    assert _bash(rules, "ls $(whoami)") == "ask"
    assert rules.decide("edit_file", RuleTarget.path("secrets/key")).decision == "deny"
    assert rules.decide("edit_file", RuleTarget.path("src/a.py")).decision == "allow"


def test_no_rule_gives_the_tools_default(ws: Path, isolated_home: Path) -> None:
    rules = _rules(ws, isolated_home)
    assert rules.decide("bash", RuleTarget.command("ls")).decision == "ask"
    assert rules.decide("write_file", RuleTarget.path("a")).decision == "ask"
    assert rules.decide("read_file", RuleTarget.path("a")).decision == "allow"
    assert rules.decide("mcp__srv__tool", None).decision == "ask"


def test_a_server_rule_covers_every_tool_of_that_server_only(ws: Path, isolated_home: Path) -> None:
    rules = _rules(
        ws, isolated_home, '[permissions]\nallow = ["mcp__demo"]\ndeny = ["mcp__gh__delete_repo"]\n'
    )
    assert rules.decide("mcp__demo__echo", None).decision == "allow"
    assert rules.decide("mcp__demo__add", None).decision == "allow"
    assert rules.decide("mcp__demonstration__echo", None).decision == "ask"
    assert rules.decide("mcp__gh__delete_repo", None).decision == "deny"
    assert rules.decide("mcp__gh__list", None).decision == "ask"


# -- paths ------------------------------------------------------------------------------------


def test_path_globs_are_gitignore_style_and_relative_to_the_workspace(ws: Path, isolated_home: Path) -> None:
    rules = _rules(
        ws, isolated_home, '[permissions]\nallow = ["edit_file(src/**)", "write_file(docs/*.md)"]\n'
    )

    def edit(path: str) -> str:
        return rules.decide("edit_file", RuleTarget.path(path)).decision

    assert edit("src/app.py") == "allow"
    assert edit("src/deep/er/x.py") == "allow"
    assert edit("./src/app.py") == "allow"
    assert edit("lib/src/app.py") == "ask"
    assert edit("README.md") == "ask"
    assert rules.decide("write_file", RuleTarget.path("docs/a.md")).decision == "allow"
    assert rules.decide("write_file", RuleTarget.path("docs/sub/a.md")).decision == "ask"
    assert rules.decide("edit_file", RuleTarget.path("docs/a.md")).decision == "ask"  # another tool


def test_an_escaping_or_absolute_path_never_matches_an_allow(
    ws: Path, isolated_home: Path, tmp_path: Path
) -> None:
    rules = _rules(
        ws,
        isolated_home,
        '[permissions]\nallow = ["edit_file(src/**)", "edit_file(*.py)"]\ndeny = ["edit_file(secrets/**)"]\n',
    )
    (ws / "src").mkdir()
    (ws / "secrets").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "src" / "out").symlink_to(outside)
    (ws / "src" / "keys").symlink_to(ws / "secrets")

    def edit(path: str) -> str:
        return rules.decide("edit_file", RuleTarget.path(path)).decision

    assert edit("src/../../x.py") == "ask"
    assert edit("../x.py") == "ask"
    assert edit(os.path.join(os.path.realpath(ws), "src", "a.py")) == "ask"  # absolute: asks
    assert edit("src/out/a.py") == "ask"  # a symlink out of the workspace
    # A deny is matched against where the path really is: through a symlink, or given absolute.
    assert edit("src/keys/id") == "deny"
    assert edit(os.path.join(os.path.realpath(ws), "secrets", "id")) == "deny"


# -- the project's rules and trust -------------------------------------------------------------


def test_project_allow_rules_wait_for_trust_and_its_deny_applies_at_once(
    ws: Path, isolated_home: Path
) -> None:
    project = '[permissions]\nallow = ["bash(make test)"]\ndeny = ["bash(curl:*)"]\n'
    rules = _rules(ws, isolated_home, project=project)
    assert _bash(rules, "make test") == "ask"
    assert _bash(rules, "curl x") == "deny"
    assert [r.rule.text for r in rules.waiting] == ["bash(make test)"]
    assert any("wait for your trust" in p and "bash(make test)" in p for p in rules.problems)
    pending = rules.pending_trust
    assert pending is not None and pending.kind == "permissions" and "bash(make test)" in pending.shown
    assert "bash(make test)" in [r.rule.text for r, state in rules.listing() if state == "waiting for trust"]

    ProjectTrust(ws, isolated_home).trust("permissions", pending.digest)
    trusted = load_permission_rules(ws, isolated_home)
    assert _bash(trusted, "make test") == "allow"
    assert trusted.pending_trust is None and trusted.waiting == ()

    # A changed allow list asks again.
    _write(
        ws / ".PseudoClaude" / "settings.toml",
        project.replace('"bash(make test)"', '"bash(make test)", "bash"'),
    )
    again = load_permission_rules(ws, isolated_home)
    assert _bash(again, "make test") == "ask"
    assert again.pending_trust is not None


def test_local_and_user_allow_rules_need_no_trust(ws: Path, isolated_home: Path) -> None:
    rules = _rules(
        ws,
        isolated_home,
        '[permissions]\nallow = ["bash(ls)"]\n',
        local='[permissions]\nallow = ["bash(make test)"]\n',
    )
    assert _bash(rules, "ls") == "allow"
    assert _bash(rules, "make test") == "allow"
    assert rules.pending_trust is None
    sources = {r.rule.text: (r.scope, r.source) for r in rules.rules}
    assert sources["bash(make test)"] == ("local", ".PseudoClaude/settings.local.toml")
    assert sources["bash(ls)"] == ("user", str(isolated_home / "config.toml"))


# -- --allow-tools and the gate ----------------------------------------------------------------


def test_allow_tools_list_keeps_commas_inside_parentheses() -> None:
    rules = parse_rule_list('bash(git commit -m "a, b":*), edit_file(src/{a,b}.py) ,write_file,')
    assert [r.text for r in rules] == [
        'bash(git commit -m "a, b":*)',
        "edit_file(src/{a,b}.py)",
        "write_file",
    ]
    with pytest.raises(ValueError, match="unbalanced"):
        parse_rule_list("bash(git status")
    with pytest.raises(ValueError, match=r"'nope': unknown tool"):
        parse_rule_list("bash,nope")


async def test_the_gate_refuses_an_ask_without_a_window(ws: Path, isolated_home: Path) -> None:
    rules = _rules(ws, isolated_home, '[permissions]\ndeny = ["bash(rm:*)"]\n').with_rules(
        parse_rule_list("bash(make test)"), scope="flag", source="--allow-tools"
    )
    gate = Gate(rules)
    ctx = ToolContext(workspace=ws)

    async def decide(name: str, **inp: object) -> PermissionDecision:
        tool = BUILTIN_TOOLS.get(name)
        assert tool is not None
        return await gate.decide(tool, tool.parse(inp), ctx=ctx)

    assert (await decide("bash", command="make test")).allowed
    denied = await decide("bash", command="rm x")
    assert not denied.allowed and "bash(rm:*)" in denied.reason
    asked = await decide("bash", command="make build")
    assert not asked.allowed and "--allow-tools" in asked.reason
    assert (await decide("read_file", path="x")).allowed


# -- suggestions and saving --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("npm run test -- --watch", ("bash(npm run test -- --watch)",)),  # exact, never widened
        ("git status -s", ("bash(git status -s)",)),
        ("git commit -m 'fix it'", ("bash(git commit -m 'fix it')",)),
        ("make", ("bash(make)",)),
        ("pytest tests/unit -x", ("bash(pytest tests/unit -x)",)),
        ("python -m pytest", ()),  # an interpreter: never proposed
        ("rm -rf build", ("bash(rm -rf build)",)),
        ("git add . && git commit -m x", ("bash(git add .)", "bash(git commit -m x)")),
        ("ls $(pwd)", ()),
        ("echo hi > out", ()),
        ("FOO=1 make", ()),
    ],
)
def test_always_allow_suggests_a_rule_that_allows_the_command(
    ws: Path, isolated_home: Path, command: str, expected: tuple[str, ...]
) -> None:
    suggested = suggest_rules("bash", RuleTarget.command(command), ws)
    assert suggested == expected
    if suggested:
        rules = load_permission_rules(ws, isolated_home).with_rules(
            [parse_rule(s) for s in suggested], scope="local", source="test"
        )
        assert _bash(rules, command) == "allow"


def test_file_suggestions_name_the_exact_path(ws: Path, isolated_home: Path) -> None:
    assert suggest_rules("edit_file", RuleTarget.path("src/app.py"), ws) == ("edit_file(src/app.py)",)
    assert suggest_rules("write_file", RuleTarget.path("setup.py"), ws) == ("write_file(/setup.py)",)
    assert suggest_rules("edit_file", RuleTarget.path("../x"), ws) == ()
    assert suggest_rules("mcp__demo__echo", None, ws) == ("mcp__demo__echo",)
    odd = suggest_rules("edit_file", RuleTarget.path("docs/[draft]*.md"), ws)
    rules = load_permission_rules(ws, isolated_home).with_rules(
        [parse_rule(odd[0])], scope="local", source="t"
    )
    assert rules.decide("edit_file", RuleTarget.path("docs/[draft]*.md")).decision == "allow"
    assert (
        rules.decide("edit_file", RuleTarget.path("docs/dx.md")).decision == "ask"
    )  # the glob characters are literal


def test_adding_and_removing_a_rule_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "settings.local.toml",
        '# my settings\nmodel = "x"  # the model\n\n[permissions]\n# reviewed\nallow = [\n'
        '  "bash(make test)",  # tests\n]\n\n[other]\nk = 1\n',
    )
    assert add_rule(path, "bash(git status:*)") is True
    assert add_rule(path, "bash(git status:*)") is False
    assert add_rule(path, "bash(rm:*)", "deny") is True
    text = path.read_text()
    for kept in ("# my settings", "# the model", "# reviewed", "# tests", "[other]"):
        assert kept in text
    data = tomllib.loads(text)
    assert data["permissions"] == {"allow": ["bash(make test)", "bash(git status:*)"], "deny": ["bash(rm:*)"]}
    assert data["other"] == {"k": 1} and data["model"] == "x"

    assert remove_rule(path, "bash(make test)") is True
    assert remove_rule(path, "bash(make test)") is False
    text = path.read_text()
    assert "# my settings" in text and "# reviewed" in text
    assert tomllib.loads(text)["permissions"]["allow"] == ["bash(git status:*)"]

    with pytest.raises(ValueError, match="unknown tool"):
        add_rule(path, "nope")
    fresh = tmp_path / "new" / "settings.local.toml"
    assert add_rule(fresh, "edit_file(src/**)")
    assert tomllib.loads(fresh.read_text()) == {"permissions": {"allow": ["edit_file(src/**)"]}}


def test_a_file_that_is_not_toml_is_not_changed(tmp_path: Path) -> None:
    path = _write(tmp_path / "config.toml", "[permissions\nallow = 1\n")
    with pytest.raises(ValueError, match="invalid TOML"):
        add_rule(path, "bash(ls)")
    assert path.read_text() == "[permissions\nallow = 1\n"


def test_the_gitignore_line_for_the_personal_file(ws: Path) -> None:
    assert gitignore_line() == "/.PseudoClaude/settings.local.toml"
    assert gitignore_line_missing(ws) == gitignore_line()
    (ws / ".gitignore").write_text("node_modules/\n" + gitignore_line() + "\n")
    assert gitignore_line_missing(ws) is None


def test_the_splitter_says_what_it_does_not_parse() -> None:
    assert split_command("a && b || c; d | e & f").problem is None
    assert [p.words for p in split_command("a && b || c; d | e & f\ng").parts] == [
        ("a",),
        ("b",),
        ("c",),
        ("d",),
        ("e",),
        ("f",),
        ("g",),
    ]
    assert [p.words for p in split_command("echo 'a && b' \"c; d\" # e; f").parts] == [
        ("echo", "a && b", "c; d")
    ]
    for command, why in [
        ("cat <<EOF", "heredoc"),
        ("a $(b)", "substitution"),
        ("a `b`", "substitution"),
        ("a \\\nb", "continuation"),
        ("a 'b", "unclosed quote"),
        ("for i in a; do b; done", "for"),
        ("echo $'x'", "quoting"),
        ("echo $((1+2))", "arithmetic"),
    ]:
        problem = split_command(command).problem
        assert problem is not None and why in problem, (command, problem)


def test_a_local_file_that_git_tracks_came_with_the_clone_and_waits_for_trust(
    tmp_path: Path, isolated_home: Path
) -> None:
    import subprocess

    repo = tmp_path / "clone"
    repo.mkdir()
    _write(
        repo / ".PseudoClaude" / "settings.local.toml",
        '[permissions]\nallow = ["bash"]\ndeny = ["bash(rm:*)"]\n',
    )
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-f", ".PseudoClaude/settings.local.toml"], check=True)
    rules = load_permission_rules(repo, isolated_home)
    assert _bash(rules, "ls") == "ask"
    assert _bash(rules, "rm x") == "deny"
    assert [r.rule.text for r in rules.waiting] == ["bash"]


def test_a_read_deny_rule_keeps_a_file_from_the_model(ws: Path, isolated_home: Path) -> None:
    rules = _rules(ws, isolated_home, '[permissions]\ndeny = ["read_file(.env)", "grep(secrets)"]\n')
    assert rules.decide("read_file", RuleTarget.path(".env")).decision == "deny"
    assert rules.decide("read_file", RuleTarget.path("sub/.env")).decision == "deny"  # no '/': any depth
    assert rules.decide("grep", RuleTarget.path("secrets/a")).decision == "deny"
    assert rules.decide("read_file", RuleTarget.path("README.md")).decision == "allow"

"""Custom slash commands: folders and namespaces, front matter, argument expansion, shadowing,
broken files listed with why, and the project's commands waiting for trust."""

from __future__ import annotations

import os
from pathlib import Path

from app.agent.config.project_trust import ProjectTrust
from app.agent.extensions.custom_commands import CommandCatalog, load_custom_commands

BUILTIN = ("/help", "/clear", "/memory", "/permissions")


def _cmd(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _prompt(catalog: CommandCatalog, text: str) -> str:
    expanded = catalog.expand_prompt(text)
    assert expanded is not None, text
    return expanded.prompt


def _body(catalog: CommandCatalog, name: str) -> str:
    command = catalog.get(name)
    assert command is not None, name
    return command.body


def _trust_project(ws: Path, home: Path) -> CommandCatalog:
    first = load_custom_commands(ws, home, builtin=BUILTIN)
    assert first.pending_trust is not None and first.pending_trust.kind == "commands"
    ProjectTrust(ws, home).trust("commands", first.pending_trust.digest)
    catalog = load_custom_commands(ws, home, builtin=BUILTIN)
    assert catalog.pending_trust is None
    return catalog


def test_personal_commands_load_with_namespaces_and_descriptions(ws: Path, isolated_home: Path) -> None:
    user = isolated_home / "commands"
    _cmd(user, "review.md", "# Review the staged changes\n\nLook at `git diff --cached`.\n")
    _cmd(
        user,
        "frontend/lint.md",
        "---\ndescription: Lint the UI\nargument-hint: [path]\nmodel: claude-haiku-5-5\n"
        "allowed-tools: bash(npm run lint:*), Bash(git status:*)\n---\nLint $ARGUMENTS\n",
    )
    _cmd(user, "notes.txt", "not a command")
    catalog = load_custom_commands(ws, isolated_home, builtin=BUILTIN)
    assert catalog.listing() == (
        ("/frontend:lint", "[path]", "Lint the UI"),
        ("/review", "", "Review the staged changes"),
    )
    lint = catalog.get("/frontend:lint")
    assert lint is not None and lint.model == "claude-haiku-5-5" and lint.scope == "user"
    assert [r.text for r in lint.allowed_tools] == ["bash(npm run lint:*)", "Bash(git status:*)"]
    assert [r.tool for r in lint.allowed_tools] == ["bash", "bash"]
    assert lint.body == "Lint $ARGUMENTS\n"
    assert catalog.broken == () and catalog.notes == ()


def test_arguments_and_positionals_expand(ws: Path, isolated_home: Path) -> None:
    user = isolated_home / "commands"
    _cmd(user, "fix.md", "Fix ticket #$1 with priority $2 (owner: $3).\nAll: $ARGUMENTS\nSee @src/app.py\n")
    _cmd(user, "plain.md", "Explain the build.\n")
    catalog = load_custom_commands(ws, isolated_home, builtin=BUILTIN)
    expanded = catalog.expand_prompt('/fix 123 "very high"')
    assert expanded is not None
    # A missing positional is empty; @path is left for the prompt's own attachment.
    assert (
        expanded.prompt
        == 'Fix ticket #123 with priority very high (owner: ).\nAll: 123 "very high"\nSee @src/app.py\n'
    )
    assert _prompt(catalog, "/fix").startswith("Fix ticket # with priority  (owner: )")
    # A body without placeholders gets the arguments on a last line; none: the body as it is.
    assert _prompt(catalog, "/plain in detail") == "Explain the build.\n\nARGUMENTS: in detail"
    assert _prompt(catalog, "/plain") == "Explain the build."
    assert catalog.expand_prompt("/unknown x") is None
    assert catalog.expand_prompt("fix 1") is None
    # Nine positionals at most: $10 is $1 then 0.
    _cmd(user, "many.md", "$9|$10")
    many = load_custom_commands(ws, isolated_home, builtin=BUILTIN).expand_prompt("/many a b c d e f g h i j")
    assert many is not None and many.prompt == "i|a0"


def test_a_name_of_a_builtin_is_refused_with_one_line(ws: Path, isolated_home: Path) -> None:
    _cmd(isolated_home / "commands", "help.md", "My help\n")
    _cmd(isolated_home / "commands", "Clear.md", "My clear\n")
    catalog = load_custom_commands(ws, isolated_home, builtin=BUILTIN)
    assert catalog.get("help") is None and catalog.get("Clear") is None
    whys = {b.name: b.why for b in catalog.broken}
    assert "built-in" in whys["help"] and "\n" not in whys["help"]
    assert "built-in" in whys["Clear"]


def test_broken_files_are_listed_with_why_and_never_raise(
    ws: Path, isolated_home: Path, tmp_path: Path
) -> None:
    user = isolated_home / "commands"
    _cmd(user, "good.md", "Fine.\n")
    _cmd(user, "yaml.md", "---\ndescription: [unclosed\nmodel: {\n---\nbody\n")
    _cmd(user, "latin.md", "caf\xe9\n".encode("latin-1"))
    _cmd(user, "big.md", "x" * (256 * 1024 + 1))
    _cmd(user, "open.md", "---\ndescription: never closed\nbody\n")
    _cmd(user, "bad name.md", "x\n")
    outside = _cmd(tmp_path, "elsewhere/secret.md", "Outside the folder\n")
    (user / "escape.md").symlink_to(outside)
    _cmd(user, "inner/target.md", "Inside\n")
    (user / "alias.md").symlink_to(user / "inner" / "target.md")
    catalog = load_custom_commands(ws, isolated_home, builtin=BUILTIN)
    assert [c.name for c in catalog.commands] == ["alias", "good", "inner:target"]
    whys = {b.path.name: b.why for b in catalog.broken}
    assert "not YAML" in whys["yaml.md"]
    assert "UTF-8" in whys["latin.md"]
    assert "256 KiB" in whys["big.md"]
    assert "closing '---'" in whys["open.md"]
    assert "not a command name" in whys["bad name.md"]
    assert "symlink leaving" in whys["escape.md"]
    assert all("\n" not in why for why in whys.values())


def test_claude_code_front_matter_that_is_not_strict_yaml_still_reads(ws: Path, isolated_home: Path) -> None:
    _cmd(
        isolated_home / "commands",
        "pr.md",
        "---\nargument-hint: [pr-number] [priority]\ndescription: Review a pull request\n---\nReview PR $1\n",
    )
    _cmd(
        isolated_home / "commands",
        "list.md",
        "---\nallowed-tools:\n  - bash(git log:*)\n  - frobnicate\nargument-hint: [file]\n---\nLog\n",
    )
    catalog = load_custom_commands(ws, isolated_home, builtin=BUILTIN)
    pr = catalog.get("pr")
    assert (
        pr is not None
        and pr.argument_hint == "[pr-number] [priority]"
        and pr.description == "Review a pull request"
    )
    listed = catalog.get("list")
    assert listed is not None and listed.argument_hint == "[file]"
    assert [r.text for r in listed.allowed_tools] == ["bash(git log:*)"]
    assert len(listed.problems) == 1 and "frobnicate" in listed.problems[0]


def test_untrusted_project_commands_are_not_loaded(ws: Path, isolated_home: Path) -> None:
    _cmd(ws / ".PseudoClaude" / "commands", "deploy.md", "Deploy everything now.\n")
    _cmd(ws / ".claude" / "commands", "ship.md", "Ship it.\n")
    catalog = load_custom_commands(ws, isolated_home, builtin=BUILTIN)
    assert catalog.commands == ()
    assert catalog.expand_prompt("/deploy") is None
    assert set(catalog.waiting) == {"deploy", "ship"}
    assert catalog.pending_trust is not None
    assert "Deploy everything now." in catalog.pending_trust.shown
    assert ".claude/commands/ship.md" in catalog.pending_trust.shown

    trusted = _trust_project(ws, isolated_home)
    assert [(c.name, c.scope, c.source) for c in trusted.commands] == [
        ("deploy", "project", ".PseudoClaude/commands"),
        ("ship", "project", ".claude/commands"),
    ]

    # A changed file asks again.
    _cmd(ws / ".claude" / "commands", "ship.md", "Ship it, and push --force.\n")
    again = load_custom_commands(ws, isolated_home, builtin=BUILTIN)
    assert again.commands == () and again.pending_trust is not None


def test_project_wins_over_personal_and_the_shadowed_one_is_reported(ws: Path, isolated_home: Path) -> None:
    _cmd(isolated_home / "commands", "test.md", "Personal test\n")
    _cmd(ws / ".PseudoClaude" / "commands", "test.md", "Project test\n")
    _cmd(ws / ".claude" / "commands", "test.md", "Claude test\n")
    _cmd(ws / ".claude" / "commands", "frontend/build.md", "Build the UI\n")
    # Until the project's commands are trusted, the personal one is the one there is.
    untrusted = load_custom_commands(ws, isolated_home, builtin=BUILTIN)
    assert _body(untrusted, "test") == "Personal test\n"
    catalog = _trust_project(ws, isolated_home)
    assert _body(catalog, "test") == "Project test\n"
    assert catalog.get("frontend:build") is not None  # .claude/commands is read too
    assert len(catalog.notes) == 2
    assert any(".claude/commands" in n and "shadowed" in n for n in catalog.notes)
    assert any(
        str(isolated_home / "commands") in n and "shadowed by /test in .PseudoClaude/commands" in n
        for n in catalog.notes
    )


def test_a_symlinked_folder_is_not_followed(ws: Path, isolated_home: Path, tmp_path: Path) -> None:
    target = tmp_path / "shared"
    _cmd(target, "x.md", "x\n")
    (isolated_home / "commands").mkdir(parents=True)
    os.symlink(target, isolated_home / "commands" / "team")
    catalog = load_custom_commands(ws, isolated_home, builtin=BUILTIN)
    assert catalog.commands == ()
    assert [b.why for b in catalog.broken] == ["a symlinked folder is not followed"]

"""Saving permission rules (what an "always allow" proposes is ``rule_suggestions``).

Rules are written into a TOML settings file (the personal ``.PseudoClaude/settings.local.toml``,
or the user's ``config.toml``) with tomlkit, which keeps the rest of the file as it was, comments
included; the result is checked with tomllib before it replaces the file.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from pathlib import Path

import pathspec
import tomlkit

from app.agent.config.layers import LOCAL_SETTINGS_REL
from app.agent.permissions.rules import LISTS, ListName, parse_rule
from app.agent.tools.registry import BUILTIN_TOOLS, ToolRegistry

__all__ = ["add_rule", "gitignore_line", "gitignore_line_missing", "remove_rule"]


def _write_atomic(path: Path, text: str) -> None:
    try:
        tomllib.loads(text)  # the editor kept the file valid: checked, never assumed
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: the change would not be valid TOML ({e}); not changed") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600 if path.name == "config.toml" else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load_doc(path: Path) -> tomlkit.TOMLDocument:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read ({e}); not changed") from None
    try:
        tomllib.loads(text)
        return tomlkit.parse(text)
    except Exception as e:  # tomllib's and tomlkit's parse errors
        raise ValueError(f"{path}: invalid TOML ({' '.join(str(e).split())}); not changed") from None


def add_rule(
    path: Path, rule: str, list_name: ListName = "allow", tools: ToolRegistry = BUILTIN_TOOLS
) -> bool:
    """Append ``rule`` (naming a tool of ``tools``) to ``[permissions] list_name`` of the TOML
    file at ``path`` (made if missing), keeping the rest of the file, comments included. False
    when it was there already. ValueError (one line) for a malformed rule or a file that is not
    TOML."""
    parse_rule(rule, tools)
    path = Path(path)
    doc = _load_doc(path)
    perms = doc.get("permissions")
    if perms is None:
        perms = tomlkit.table()
        doc["permissions"] = perms
    if not isinstance(perms, dict):
        raise ValueError(f"{path}: 'permissions' is not a table; not changed")
    rules = perms.get(list_name)
    if rules is None:
        rules = tomlkit.array()
        perms[list_name] = rules
    if not isinstance(rules, list):
        raise ValueError(f"{path}: permissions.{list_name} is not a list; not changed")
    if rule.strip() in [str(r) for r in rules]:
        return False
    rules.append(rule.strip())
    _write_atomic(path, tomlkit.dumps(doc))
    return True


def remove_rule(path: Path, rule: str, list_name: ListName | None = None) -> bool:
    """Remove ``rule`` from ``[permissions]`` (``list_name``, or every list) of the file at
    ``path``, keeping the rest. False when it was not there."""
    path = Path(path)
    if not path.exists():
        return False
    doc = _load_doc(path)
    perms = doc.get("permissions")
    if not isinstance(perms, dict):
        return False
    removed = False
    for name in (list_name,) if list_name else LISTS:
        rules = perms.get(name)
        if not isinstance(rules, list):
            continue
        for i in reversed(range(len(rules))):
            if str(rules[i]) == rule.strip():
                del rules[i]
                removed = True
    if removed:
        _write_atomic(path, tomlkit.dumps(doc))
    return removed


def gitignore_line() -> str:
    """The line that keeps the personal settings file out of git."""
    return "/" + LOCAL_SETTINGS_REL.as_posix()


def gitignore_line_missing(workspace: Path) -> str | None:
    """``gitignore_line()`` when neither the workspace's ``.gitignore`` nor ``.PseudoClaude/.gitignore``
    ignores the personal settings file yet; None when one does."""
    workspace = Path(workspace)
    for folder, rel in (
        (workspace, LOCAL_SETTINGS_REL.as_posix()),
        (workspace / ".PseudoClaude", LOCAL_SETTINGS_REL.name),
    ):
        try:
            lines = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        if pathspec.GitIgnoreSpec.from_lines(lines).match_file(rel):
            return None
    return gitignore_line()

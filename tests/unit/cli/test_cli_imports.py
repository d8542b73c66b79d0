"""The command line's modules import one another one way only: a helper two commands share lives
in a module both import (app/cli/memory/common.py), never in one of the commands."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[3] / "app" / "cli"


def _cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import circle among ``edges`` (module -> the modules it imports), or []."""
    done: set[str] = set()

    def visit(m: str, path: list[str]) -> list[str]:
        if m in path:
            return [*path[path.index(m) :], m]
        if m in done:
            return []
        for n in sorted(edges.get(m, ())):
            found = visit(n, [*path, m])
            if found:
                return found
        done.add(m)
        return []

    for m in sorted(edges):
        found = visit(m, [])
        if found:
            return found
    return []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def _cli_imports(source: str) -> set[str]:
    """The command-line modules a module imports, at any depth (inside functions too: a circle
    closed inside a function is still a circle)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return {m.removeprefix("app.cli.") for m in found if m.startswith("app.cli.")}


def test_the_import_reader_sees_every_spelling() -> None:
    source = (
        "from app.cli import output as o\n"
        "def f():\n    from app.cli.memory.common import err\n"
        "import app.cli.main\n"
    )
    assert _cli_imports(source) >= {"output", "memory.common", "main"}


def test_no_import_circle_in_the_command_line() -> None:
    modules = {
        ".".join(p.relative_to(CLI).with_suffix("").parts): p
        for p in CLI.rglob("*.py")
        if p.stem != "__init__"
    }
    edges = {m: _cli_imports(p.read_text(encoding="utf-8")) & modules.keys() for m, p in modules.items()}
    assert len(modules) > 5 and edges["memory.commands"] and _cycle(edges) == []

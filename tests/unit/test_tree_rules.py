"""The tree's size rules: no product file over 600 lines, no function over 60.

A file or function that grows past them has taken on a second job; the exceptions below are the
ones kept on purpose, each with its reason. The import rules are import-linter's (.importlinter) and
the types mypy's: `make test` runs both.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "memory", "widgets")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 60

# "path" or "path:function" -> why it stays longer than the rule.
EXCEPTIONS: dict[str, str] = {}


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _functions(tree: ast.AST) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found.append((node.name, (node.end_lineno or node.lineno) - start + 1))
    return found


def test_no_product_file_is_over_600_lines() -> None:
    long = {}
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_FILE_LINES and rel not in EXCEPTIONS:
            long[rel] = lines
    assert not long, f"over {MAX_FILE_LINES} lines: {long}"


def test_no_function_is_over_60_lines() -> None:
    long = {}
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        for name, length in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            if length > MAX_FUNCTION_LINES and f"{rel}:{name}" not in EXCEPTIONS:
                long[f"{rel}:{name}"] = length
    assert not long, f"over {MAX_FUNCTION_LINES} lines: {long}"


def test_each_exception_is_still_needed() -> None:
    """An exception whose file or function shrank back under the rule is dropped from the list."""
    stale = []
    for key in EXCEPTIONS:
        rel, _, func = key.partition(":")
        path = ROOT / rel
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if func:
            needed = any(n > MAX_FUNCTION_LINES for name, n in _functions(ast.parse(text)) if name == func)
        else:
            needed = text.count("\n") > MAX_FILE_LINES
        if not needed:
            stale.append(key)
    assert not stale, f"within the rules now, drop their exceptions: {stale}"


# A comment or docstring states the rule itself: a section of a design document or an issue
# number is nothing a reader of this repository can open.
_CITATION = re.compile(r"DESIGN(?:\.md)?\s*§|§\s*\d|\bissues?\s+#?\d+")


def test_no_comment_cites_a_design_section_or_an_issue() -> None:
    found = []
    for path in sorted(p for top in (*PACKAGES, "tests") for p in (ROOT / top).rglob("*.py")):
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _CITATION.search(line):
                found.append(f"{path.relative_to(ROOT).as_posix()}:{number}: {line.strip()[:100]}")
    assert not found, "state the rule itself:\n" + "\n".join(found)

"""The tree's rules: no product file over 600 lines, no function over 60, no comment citing what a
reader cannot open, no text the product rendered parsed back, and a reason for every import inside
a function in app/.

A file or function that grows past the size rules has taken on a second job: it is split, never
excused. The import rules are import-linter's (.importlinter) and the types mypy's: `make test`
runs both.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "memory", "widgets")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 60


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
        if lines > MAX_FILE_LINES:
            long[rel] = lines
    assert not long, f"over {MAX_FILE_LINES} lines: {long}"


def test_no_function_is_over_60_lines() -> None:
    long = {}
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        for name, length in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            if length > MAX_FUNCTION_LINES:
                long[f"{rel}:{name}"] = length
    assert not long, f"over {MAX_FUNCTION_LINES} lines: {long}"


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


# The prompt's index reaches the panel, a Run's start and read_memory's receipt as data
# (memory.model.IndexEntry, MemoryText): text made for the model or a person is never parsed
# back for what the data already says. The store itself may read its own index lines.
_PARSE_BACK = re.compile(
    r"\bINDEX_LINE_RE\b|\b_parse_merged\b|\b_OVERFLOW_RE\b|\bindex_files\(|\bindex_keys\("
    r"|\b_is_stale\b|\bSTALE_LINE\b|\bCITES_HEAD\b"
)
_REGEX_CALLS = frozenset(
    {"compile", "match", "search", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
)
# Files that parse index text on purpose -> why.
PARSE_BACK_EXCEPTIONS: dict[str, str] = {
    "app/agent/memory_bridge/receipts.py": (
        "a turn's receipt reads the index the Run was shown, as the session recorded it"
    ),
    "app/agent/memory_bridge/heads.py": (
        "a resumed conversation's index and <memory-recall> blocks exist only as its text"
    ),
}


def _stale_regexes(tree: ast.AST) -> list[int]:
    """Lines of ``re``/``regex`` calls whose pattern mentions "stale" (a stale mark read back)."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _REGEX_CALLS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in ("re", "regex")
        ):
            texts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if any("stale" in t.lower() for t in texts):
                found.append(node.lineno)
    return found


def parse_backs(root: Path) -> dict[str, list[int]]:
    """rel path -> lines outside memory/ that parse the index or a read's text back."""
    found: dict[str, list[int]] = {}
    for top in ("app", "widgets"):
        for path in sorted((root / top).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            lines = [n for n, line in enumerate(text.splitlines(), 1) if _PARSE_BACK.search(line)]
            lines += _stale_regexes(ast.parse(text))
            if lines:
                found[path.relative_to(root).as_posix()] = sorted(set(lines))
    return found


def test_no_index_text_is_parsed_back_outside_the_store() -> None:
    found = {rel: lines for rel, lines in parse_backs(ROOT).items() if rel not in PARSE_BACK_EXCEPTIONS}
    assert not found, f"read the index entries or the read's data, not its text: {found}"


def test_each_parse_back_exception_is_still_needed() -> None:
    found = parse_backs(ROOT)
    assert not [rel for rel in PARSE_BACK_EXCEPTIONS if rel not in found], (
        "within the rule now: drop its exception"
    )


def test_the_parse_back_rule_sees_a_regex_over_a_stale_mark() -> None:
    assert _stale_regexes(ast.parse('import re\nSTALE = re.compile(r" \\(stale: (.+)\\)$")\n')) == [2]
    assert _stale_regexes(ast.parse('import re\nWORD = re.compile(r"\\w+")\n')) == []


# An import inside a function is there for a reason a reader must be told (a start-up cost, a
# module loaded only by the command that needs it): the comment on its line, or on the line right
# above it (or above the block of imports it stands in), says which.
_IMPORT_LINE = re.compile(r"\s*(from\s+\S+\s+import\b|import\s)")


def _function_imports(tree: ast.AST) -> list[int]:
    found: list[int] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child.lineno)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return found


def _says_why(lines: list[str], lineno: int) -> bool:
    if "#" in lines[lineno - 1]:
        return True
    i = lineno - 2
    while i >= 0 and (
        _IMPORT_LINE.match(lines[i])
        or lines[i].strip() in (")", "")
        or (lines[i].startswith(" " * 8) and lines[i].strip().endswith(","))
    ):
        if "#" in lines[i]:
            return True
        i -= 1
    return i >= 0 and lines[i].strip().startswith("#")


def test_each_import_inside_a_function_in_app_says_why() -> None:
    silent = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for lineno in _function_imports(ast.parse(text)):
            if not _says_why(lines, lineno):
                silent.append(f"{path.relative_to(ROOT).as_posix()}:{lineno}: {lines[lineno - 1].strip()}")
    assert not silent, "an import inside a function says why it is not at the top:\n" + "\n".join(silent)


def test_the_import_rule_sees_a_silent_import_and_a_reason() -> None:
    source = (
        "def f():\n"
        "    import json\n"
        "\n"
        "def g():\n"
        "    # the SDK: seconds, only when a model is asked\n"
        "    import anthropic\n"
        "    from x import (\n"
        "        y,\n"
        "    )\n"
    )
    lines = source.splitlines()
    assert [n for n in _function_imports(ast.parse(source)) if not _says_why(lines, n)] == [2]

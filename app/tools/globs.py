"""Glob patterns for list_files and grep, matched against '/'-separated relative paths.

``*`` and ``?`` stay inside one path component, ``**`` spans any number of folders (``**/``
also matches none), ``[abc]``/``[!abc]`` are classes, ``{a,b}`` alternatives. ``*`` matches
names starting with a dot too.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import pairwise

MAX_BRACE_EXPANSIONS = 64


def expand_braces(pattern: str) -> list[str]:
    """``a.{py,md}`` -> ``["a.py", "a.md"]`` (nested braces work; an unmatched ``{`` is literal)."""
    out: list[str] = []
    todo = [pattern]
    while todo:
        p = todo.pop()
        start = p.find("{")
        depth = 0
        end = -1
        commas: list[int] = []
        if start >= 0:
            for i in range(start, len(p)):
                c = p[i]
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        end = i
                        break
                elif c == "," and depth == 1:
                    commas.append(i)
        if start < 0 or end < 0 or not commas:
            out.append(p)
        else:
            bounds = [start, *commas, end]
            for a, b in pairwise(bounds):
                todo.append(p[:start] + p[a + 1 : b] + p[end + 1 :])
        if len(out) + len(todo) > MAX_BRACE_EXPANSIONS:
            raise ValueError(f"the pattern expands to more than {MAX_BRACE_EXPANSIONS} alternatives")
    return out


def _component(part: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(part):
        c = part[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < len(part) and part[j] in "!^":
                j += 1
            if j < len(part) and part[j] == "]":
                j += 1
            while j < len(part) and part[j] != "]":
                j += 1
            if j >= len(part):
                out.append(re.escape(c))
            else:
                body = part[i + 1 : j]
                neg = body[:1] in ("!", "^")
                if neg:
                    body = body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"[{'^/' if neg else ''}{body}]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _translate(pattern: str) -> str:
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    out: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append("(?:[^/]+/)*[^/]+" if last else "(?:[^/]+/)*")
        else:
            out.append(_component(part) + ("" if last else "/"))
    return "".join(out)


@lru_cache(maxsize=128)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex that full-matches the relative paths ``pattern`` names. ValueError if unusable."""
    alts = expand_braces(pattern.strip())
    try:
        return re.compile("|".join(f"(?:{_translate(a)})" for a in alts), re.DOTALL)
    except re.error as e:
        raise ValueError(f"invalid glob pattern: {e}") from None


def glob_depth(pattern: str) -> float:
    """How many folder levels a pattern can reach (inf with ``**``)."""
    depth = 0
    for alt in expand_braces(pattern.strip()):
        parts = [p for p in alt.split("/") if p not in ("", ".")]
        if "**" in parts:
            return float("inf")
        depth = max(depth, len(parts))
    return float(depth)


def named_skip_dirs(pattern: str | None, skip: frozenset[str]) -> frozenset[str]:
    """The skipped folder names a pattern names explicitly (those are walked after all)."""
    if not pattern:
        return frozenset()
    named = set()
    for alt in expand_braces(pattern):
        for part in alt.split("/"):
            if part in skip:
                named.add(part)
    return frozenset(named)

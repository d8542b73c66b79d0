"""Glob patterns for list_files and grep, matched against '/'-separated relative paths.

``*`` and ``?`` stay inside one path component, ``**`` spans any number of folders (``**/``
also matches none), ``[abc]``/``[!abc]`` are classes, ``{a,b}`` alternatives. ``*`` matches
names starting with a dot too.

Hand-written rather than pathspec's gitignore patterns, which differ where the tools' tests rely
on it: gitignore has no ``{a,b}``; a pattern without ``/`` there matches at any depth (``*.py``
would list every Python file, here only those directly in the folder); and pathspec compiles
``*`` to a backtracking stdlib regex, so a model's ``*a*a*a*a*a*a*ab`` takes seconds per long
name, where matching here stays linear (one component at a time, ``**`` by dynamic programming).
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


def _tokens(part: str) -> list[str]:
    """One path component's pattern as regex pieces, one per character matched; ``*`` runs
    become a single ``"*"`` marker."""
    out: list[str] = []
    i = 0
    while i < len(part):
        c = part[i]
        if c == "*":
            if not out or out[-1] != "*":
                out.append("*")
        elif c == "?":
            out.append(".")
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
    return out


def _component(part: str) -> str:
    """A regex that full-matches the component names ``part`` names, in linear time: between
    two stars a fixed-length chunk is taken at its first fit and never given back (an atomic
    group, as fnmatch does), so ``*a*a*a*…b`` cannot backtrack exponentially."""
    chunks: list[list[str]] = [[]]
    for t in _tokens(part):
        if t == "*":
            chunks.append([])
        else:
            chunks[-1].append(t)
    if len(chunks) == 1:
        return "".join(chunks[0])
    middle = "".join(f"(?>.*?{''.join(c)})" for c in chunks[1:-1] if c)
    return "".join(chunks[0]) + middle + ".*" + "".join(chunks[-1])


class Glob:
    """A compiled glob. ``fullmatch(rel)`` matches a '/'-separated relative path component by
    component (``**`` by dynamic programming), so no pattern can take exponential time."""

    def __init__(self, alternatives: list[list[re.Pattern[str] | None]]) -> None:
        self.alternatives = alternatives  # per alternative: its parts, None for "**"

    def fullmatch(self, rel: str) -> bool:
        comps = rel.split("/")
        return any(_match_parts(parts, comps) for parts in self.alternatives)


def _match_parts(parts: list[re.Pattern[str] | None], comps: list[str]) -> bool:
    n = len(comps)
    # ok[j]: parts[i:] match comps[j:], built from the last part backwards.
    ok = [False] * n + [True]
    for i in range(len(parts) - 1, -1, -1):
        part = parts[i]
        new = [False] * (n + 1)
        if part is None:
            if i == len(parts) - 1:
                # A final "**" stands for one or more components.
                for j in range(n):
                    new[j] = True
            else:
                # "**/" stands for zero or more components: any later start that matches.
                later = False
                for j in range(n, -1, -1):
                    later = later or ok[j]
                    new[j] = later
        else:
            for j in range(n):
                new[j] = ok[j + 1] and part.fullmatch(comps[j]) is not None
        ok = new
    return ok[0]


@lru_cache(maxsize=128)
def compile_glob(pattern: str) -> Glob:
    """The matcher for the relative paths ``pattern`` names. ValueError if unusable."""
    alternatives: list[list[re.Pattern[str] | None]] = []
    try:
        for alt in expand_braces(pattern.strip()):
            parts = [p for p in alt.split("/") if p not in ("", ".")]
            compiled: list[re.Pattern[str] | None] = []
            for p in parts:
                if p == "**":
                    if compiled and compiled[-1] is None:
                        continue  # "**/**" is "**"
                    compiled.append(None)
                else:
                    compiled.append(re.compile(_component(p), re.DOTALL))
            alternatives.append(compiled)
    except re.error as e:
        raise ValueError(f"invalid glob pattern: {e}") from None
    return Glob(alternatives)


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

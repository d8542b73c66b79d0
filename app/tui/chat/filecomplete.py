"""``@path`` in the prompt: the workspace's files and fuzzy matching (``app.agent.conversation.attachments``
attaches the one picked).

The App lists the files in a worker thread (``workspace_files`` runs git or walks the disk)
and keeps the list; ``fuzzy`` then runs on each key press against that list, so it must stay
cheap on 50,000 paths: one compiled regular expression rejects most paths in C before any
scoring in Python.
"""

from __future__ import annotations

import heapq
import os
import re
import subprocess
from pathlib import Path

import pathspec

__all__ = ["fuzzy", "workspace_files"]

# Folders a walk never enters: tool caches and dependencies nobody attaches by name.
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", "target", "dist", "build"})
GIT_TIMEOUT = 5.0


# -- listing ---------------------------------------------------------------------------------


def workspace_files(workspace: Path, limit: int = 50_000) -> list[str]:
    """Workspace-relative POSIX paths of the workspace's files, at most ``limit``, sorted.

    In a git work tree: tracked and untracked files minus ignored ones (git's own
    ``--exclude-standard`` rules). Elsewhere, or when git is missing or refuses: a bounded walk
    that skips dot-folders, ``node_modules``, virtualenvs and the paths the ``.gitignore`` files
    it meets exclude.
    """
    workspace = Path(workspace)
    files = _git_files(workspace, limit) if (workspace / ".git").exists() else None
    if files is None:
        files = _walk_files(workspace, limit)
    return sorted(files)


def _git_files(workspace: Path, limit: int) -> list[str] | None:
    try:
        proc = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z", "--deduplicate"],
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None  # not really a work tree, a dubious-ownership refusal, an old git: walk instead
    out: list[str] = []
    for raw in proc.stdout.split(b"\0"):
        if not raw:
            continue
        rel = os.fsdecode(raw)
        # -c lists files deleted from the work tree and submodule folders: only real files remain.
        if not os.path.isfile(workspace / rel):
            continue
        out.append(rel)
        if len(out) >= limit:
            break
    return out


def _walk_files(workspace: Path, limit: int) -> list[str]:
    out: list[str] = []
    # (folder, its path relative to the workspace, the .gitignore files in force there, outermost first)
    stack: list[tuple[Path, str, tuple[_Ignore, ...]]] = [(workspace, "", ())]
    while stack and len(out) < limit:
        folder, rel, ignores = stack.pop()
        spec = _read_gitignore(folder / ".gitignore")
        if spec is not None:
            ignores = (*ignores, (rel, spec))
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            path = f"{rel}{entry.name}"
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file()
            except OSError:
                continue
            if is_dir:
                if entry.name.startswith(".") or entry.name in SKIP_DIRS or _is_venv(entry.path):
                    continue
                if not _ignored(ignores, path, is_dir=True):
                    subdirs.append((Path(entry.path), path + "/", ignores))
            elif is_file and not _ignored(ignores, path, is_dir=False):
                out.append(path)
                if len(out) >= limit:
                    break
        stack.extend(reversed(subdirs))
    return out


def _is_venv(path: str) -> bool:
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))


# One .gitignore file: the folder it sits in (workspace-relative, "" or ending in "/") and its rules.
_Ignore = tuple[str, pathspec.GitIgnoreSpec]


def _read_gitignore(path: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(256 * 1024)
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
    return spec if len(spec.patterns) else None


def _ignored(ignores: tuple[_Ignore, ...], path: str, *, is_dir: bool) -> bool:
    # The last matching rule wins, as in git: a deeper .gitignore decides before the ones above
    # it. An ignored folder is never entered, so a later "!" cannot bring back a file below it
    # (git behaves the same).
    for base, spec in reversed(ignores):
        # A trailing "/" is how pathspec tells a folder (which "name/" rules match) from a file.
        decided = spec.check_file(path[len(base) :] + ("/" if is_dir else "")).include
        if decided is not None:
            return decided
    return False


# -- matching --------------------------------------------------------------------------------


def fuzzy(query: str, paths: list[str], limit: int = 20) -> list[str]:
    """The best ``limit`` paths for ``query``, best first (case-insensitive).

    Ranks: the file name starts with the query, then the path does, then the file name
    contains it (nearer its start first), then the path does, then its characters appear in
    order (the tighter the better). Ties: shorter paths, then alphabetical. An empty query gives
    the shallowest paths. Each rank is one pass in a comprehension, and the later (costlier)
    ranks are skipped once the better ones fill ``limit``: this runs on every key press.
    """
    if limit <= 0:
        return []
    q = query.strip().lower()
    if not q:
        return heapq.nsmallest(limit, paths, key=lambda p: (p.count("/"), len(p), p))
    lows, names = _prepared(paths)
    out: list[str] = []
    taken: set[int] = set()

    def take(ranked: list[tuple[int, int, str, int]]) -> bool:
        for *_, i in heapq.nsmallest(limit - len(out), ranked):
            out.append(paths[i])
            taken.add(i)
        return len(out) >= limit

    def key(i: int, spread: int = 0) -> tuple[int, int, str, int]:
        return (spread, len(paths[i]), paths[i], i)

    if take([key(i) for i, low in enumerate(lows) if low.startswith(q, names[i])]):
        return out
    if take([key(i) for i, low in enumerate(lows) if low.startswith(q) and i not in taken]):
        return out
    if take(
        [
            key(i, low.find(q, names[i]) - names[i])
            for i, low in enumerate(lows)
            if i not in taken and low.find(q, names[i]) != -1
        ]
    ):
        return out
    if take([key(i, low.find(q)) for i, low in enumerate(lows) if i not in taken and q in low]):
        return out
    # The letters in order: the lazy match from the leftmost start is short when they sit
    # close together; its length beyond the query measures the scatter.
    rx = re.compile(".*?".join(re.escape(c) for c in q))
    scattered = []
    for i, low in enumerate(lows):
        if i in taken:
            continue
        m = rx.search(low)
        if m is not None:
            scattered.append(key(i, _tightest(low, q, m.start()) - len(q)))
    take(scattered)
    return out


# The lowered paths and their file-name offsets for the last list seen: the App passes the same
# list on every key press (and a new list object when the files change; never mutated in place).
_PREPARED: list[tuple[list[str], int, list[str], list[int]]] = []


def _prepared(paths: list[str]) -> tuple[list[str], list[int]]:
    if _PREPARED and _PREPARED[0][0] is paths and _PREPARED[0][1] == len(paths):
        return _PREPARED[0][2], _PREPARED[0][3]
    lows = [p.lower() for p in paths]
    names = [low.rfind("/") + 1 for low in lows]  # where each file name starts
    _PREPARED[:] = [(paths, len(paths), lows, names)]
    return lows, names


def _tightest(text: str, q: str, start: int) -> int:
    """The length of the shortest window of ``text`` (from ``start`` on) holding ``q`` in order."""
    best = len(text) + 1
    while start != -1:
        i, k = start, 0
        while k < len(q):
            i = text.find(q[k], i)
            if i == -1:
                return best
            i += 1
            k += 1
        best = min(best, i - start)
        start = text.find(q[0], start + 1)
    return best

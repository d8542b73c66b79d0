"""Workspace confinement for the file tools.

Every path is resolved against the workspace (relative paths relative to it, absolute paths
only if inside it). Both the lexical path (``..`` collapsed) and the real path (every symlink
resolved) must stay inside, so neither ``../x`` nor a symlink whose target leaves the workspace
is ever followed out. Writes also check the real path of the parent folder and refuse ``.git/``,
the memory stores and the app's own state.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from app.agent.tools.base import ToolError, display_name, quote
from memory.store.paths import PROJECT_STORE_REL, pseudoclaude_home

# How a file tool's path input is described to the model.
PATH_NOTE = "relative to the workspace root (an absolute path must be inside the workspace)"
# Folders the walkers (list_files, grep) never descend into unless the pattern names them.
SKIP_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__"})

_MEMORY_PARTS = tuple(p.casefold() for p in PROJECT_STORE_REL.parts)


@dataclass(frozen=True)
class Resolved:
    real: str  # the real path (all symlinks resolved), inside the workspace
    display: str  # workspace-relative POSIX path for messages ("." = the workspace itself)
    workspace: str  # the workspace's real path


def inside(path: str, root: str) -> bool:
    if path == root:
        return True
    return path.startswith(root if root.endswith(os.sep) else root + os.sep)


def rel_display(path: str, workspace: str) -> str:
    """The workspace-relative path shown to the model; undecodable bytes in names become U+FFFD."""
    rel = os.path.relpath(path, workspace)
    return display_name(rel.replace(os.sep, "/") if os.sep != "/" else rel)


def resolve(workspace: Path | str, raw: str) -> Resolved:
    """Resolve ``raw`` for reading; raises ToolError with a one-line reason if it leaves the workspace."""
    ws = os.path.realpath(workspace)
    if "\x00" in raw:
        raise ToolError("path contains a NUL character")
    joined = raw if os.path.isabs(raw) else os.path.join(ws, raw)
    lexical = os.path.normpath(joined)
    real = os.path.realpath(joined)
    if os.path.isabs(raw):
        # An absolute path may name the workspace through a symlinked prefix (/tmp on macOS):
        # what counts is where it really is.
        if not inside(real, ws):
            raise ToolError(
                f"{quote(raw)} is outside the workspace {quote(ws)}; only paths inside it can be used"
            )
    elif not inside(lexical, ws):
        raise ToolError(
            f"{quote(raw)} leaves the workspace through '..'; only paths inside {quote(ws)} can be used"
        )
    if not inside(real, ws):
        raise ToolError(
            f"{quote(raw)} resolves through a symlink to {quote(real)}, outside the workspace; refused"
        )
    shown = lexical if inside(lexical, ws) else real
    return Resolved(real=real, display=rel_display(shown, ws), workspace=ws)


def _protected_reason(path: str, ws: str, raw: str) -> str | None:
    parts = [p.casefold() for p in Path(os.path.relpath(path, ws)).parts if p not in (".", "")]
    if ".git" in parts:
        return (
            f"{quote(raw)} is inside .git/: the repository's internals are changed only through git "
            "(use bash)"
        )
    if tuple(parts[: len(_MEMORY_PARTS)]) == _MEMORY_PARTS:
        return (
            f"{quote(raw)} is inside the project memory store: memory is changed only by the memory system "
            "or the person (read notes with read_memory)"
        )
    home = os.path.realpath(pseudoclaude_home())
    if inside(path, os.path.join(home, "memory")):
        return (
            f"{quote(raw)} is inside the user memory store: memory is changed only by the memory system "
            "or the person (read notes with read_memory)"
        )
    if inside(path, home):
        return f"{quote(raw)} is inside PseudoClaude's own state folder {quote(home)}; refused"
    return None


def resolve_write(workspace: Path | str, raw: str) -> Resolved:
    """Resolve ``raw`` for writing: ``resolve`` plus the parent's real path and the protected folders."""
    r = resolve(workspace, raw)
    ws = r.workspace
    joined = raw if os.path.isabs(raw) else os.path.join(ws, raw)
    parent_real = os.path.realpath(os.path.dirname(os.path.normpath(joined)) or ws)
    if not inside(parent_real, ws):
        raise ToolError(
            f"the folder of {quote(raw)} resolves to {quote(parent_real)}, outside the workspace; refused"
        )
    if r.real == ws:
        raise ToolError(f"{quote(raw)} is the workspace folder itself, not a file")
    lexical = os.path.normpath(joined)
    for candidate in (lexical, r.real, parent_real):
        if inside(candidate, ws):
            reason = _protected_reason(candidate, ws, raw)
            if reason:
                raise ToolError(reason)
    return r


def check_parent_after_mkdir(r: Resolved, raw: str) -> None:
    """After creating parent folders, check again where the parent really is (a race could
    have swapped in a symlink)."""
    parent_real = os.path.realpath(os.path.dirname(r.real))
    if not inside(parent_real, r.workspace):
        raise ToolError(f"the folder of {quote(raw)} resolves outside the workspace; refused")
    reason = _protected_reason(parent_real, r.workspace, raw)
    if reason:
        raise ToolError(reason)

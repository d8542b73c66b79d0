"""Which workspace paths a card may cite: the file tools' confinement, for citations.

A citation comes from a model's answer (or a person's op) and is hostile input: it is kept only
when it names a regular file inside the workspace, by a relative path that does not leave it
through ``..`` or a symlink, outside ``.git/``, the memory stores and the app's own folder.
Each refusal is one line naming the path.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from memory.text.names import quote

__all__ = ["CiteRefused", "Confined", "confine_cite", "encodable", "inside", "parse_spec"]

# A cited file's content is hashed; past this it is not a source file a card can rest on.
MAX_CITED_BYTES = 64 * 1024 * 1024
MAX_SPEC_CHARS = 1024
_RANGE_RE = re.compile(r"(.+?):([1-9][0-9]{0,8})(?:-([1-9][0-9]{0,8}))?")


class CiteRefused(ValueError):
    """A citation that cannot be kept; ``str()`` is the one-line reason."""


@dataclass(frozen=True)
class Confined:
    rel: str  # workspace-relative, POSIX separators, normalised
    real: str  # the file's real path (inside the workspace)


def inside(path: str, root: str) -> bool:
    if path == root:
        return True
    return path.startswith(root if root.endswith(os.sep) else root + os.sep)


def encodable(path: str) -> bool:
    """Whether ``path`` can name a file here at all (a lone surrogate from JSON cannot: the OS
    calls would raise UnicodeEncodeError, not OSError)."""
    try:
        os.fsencode(path)
    except UnicodeError:
        return False
    return True


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``path`` or ``path:START-END`` → (path, "START-END" | "START" | None). A range whose end
    comes before its start is refused."""
    m = _RANGE_RE.fullmatch(spec)
    if m is None:
        return spec, None
    path, start, end = m.group(1), m.group(2), m.group(3)
    if end is not None and int(end) < int(start):
        raise CiteRefused(f"{quote(spec)}: the line range ends before it starts")
    return path, f"{start}-{end}" if end is not None else start


def _refuse(raw: str, why: str) -> CiteRefused:
    return CiteRefused(f"{quote(raw)} {why}")


def confine_cite(workspace: str, raw: str, protected: Sequence[str]) -> Confined:
    """``raw`` (a path, no range) as a citable file of ``workspace`` (a real path), or raise
    CiteRefused. ``protected``: real paths of folders never cited (the stores, the app's home)."""
    if not raw or not raw.strip():
        raise CiteRefused("an empty path")
    if "\x00" in raw or any(ord(c) < 32 for c in raw):
        raise _refuse(raw, "holds a control character")
    if not encodable(raw):
        raise _refuse(raw, "is not a valid file name")
    if raw.startswith(("/", "\\")) or os.path.isabs(raw) or re.match(r"[A-Za-z]:[\\/]", raw):
        raise _refuse(raw, "is an absolute path; a citation is relative to the workspace")
    posix = raw.replace("\\", "/")
    joined = os.path.join(workspace, posix)
    lexical = os.path.normpath(joined)
    if not inside(lexical, workspace) or ".." in posix.split("/"):
        raise _refuse(raw, "leaves the workspace through '..'")
    rel = os.path.relpath(lexical, workspace).replace(os.sep, "/")
    if rel == ".":
        raise _refuse(raw, "is the workspace folder itself, not a file")
    parts = [p.casefold() for p in rel.split("/")]
    if ".git" in parts:
        raise _refuse(raw, "is inside .git/: a card cites the repository's files, not git's")
    real = os.path.realpath(joined)
    if not inside(real, workspace):
        raise _refuse(raw, "resolves through a symlink outside the workspace")
    for folder in protected:
        if inside(real, folder) or inside(lexical, folder):
            raise _refuse(raw, "is inside a memory store or PseudoClaude's own folder")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise _refuse(raw, "does not exist in the workspace") from None
    except OSError as e:
        raise _refuse(raw, f"cannot be read ({e.strerror or type(e).__name__})") from None
    if stat.S_ISDIR(st.st_mode):
        raise _refuse(raw, "is a folder; a citation names a file")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(raw, "is not a regular file")
    if st.st_size > MAX_CITED_BYTES:
        raise _refuse(raw, f"is larger than {MAX_CITED_BYTES // (1024 * 1024)} MiB")
    return Confined(rel=rel, real=real)

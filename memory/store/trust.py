"""Trust of a project store: a store that came with a cloned repository enters no prompt and no
extraction request until the person trusts it once for that workspace.

Trust is keyed to the repository's identity, not to its path: a random workspace id is kept in
a marker file that a clone never copies — inside the work tree's own ``.git/`` folder
(``.git/pseudoclaude-id``), or for a workspace that is not a git repository, in its
``.PseudoClaude/workspace-id`` — and the record under ``$PSEUDOCLAUDE_HOME/trust/<id>.json``
names that id. So ``rm -rf clone && git clone other clone`` gives a folder without the marker
(asked again, whatever inode or path it has), a moved clone keeps its ``.git`` and its trust, and
cards that teammates add later with ``git pull`` stay trusted. The id is 128 random bits known
only to this machine: a repository cannot ship a marker that matches a record here.

A ``.git`` *file* (a worktree) is followed only when its git folder points back at this work
tree; otherwise (a submodule, or a downloaded ``.git`` file aimed at some other trusted
repository) the non-git marker is used. A missing, damaged or mismatched marker or record means
"not trusted": the person is asked again, nothing is let in by mistake.

A store our own code creates is trusted from the start: the transaction records trust when it
writes into a project store that has nothing in it yet (memory/store/journal.py).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from memory.store.fs import FS, UnsafePathError
from memory.store.paths import PROJECT_STORE_REL, Paths

if TYPE_CHECKING:  # the question before the stores load (needs_asking) imports no more than this
    from memory.store.layout import StoreLayout
    from memory.store.store import Store

__all__ = [
    "UNTRUSTED_REASON",
    "has_content",
    "is_recorded",
    "needs_asking",
    "project_trusted",
    "record_trust",
    "trust_file",
    "workspace_id",
    "workspace_marker",
]

TRUST_DIR = "trust"
MAX_RECORD_BYTES = 64 * 1024
GIT_MARKER = "pseudoclaude-id"
PLAIN_MARKER = "workspace-id"
_ID_RE = re.compile(r"[0-9a-f]{32}")

UNTRUSTED_REASON = (
    "the project store came with this workspace and is not trusted yet, so memory does not use "
    "or change it (trust it once: answer y when the app asks, or run "
    "`pseudoclaude -p --trust-project-memory ...`)"
)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _worktree_git_dir(workspace: Path, dot_git: Path) -> Path | None:
    """The git folder a ``.git`` file names, if that folder points back at this work tree."""
    try:
        with open(dot_git, "rb") as f:
            head = f.read(4097)
    except OSError:
        return None
    text = head.decode("utf-8", "replace").strip()
    if not text.startswith("gitdir:") or "\n" in text:
        return None
    target = Path(text.removeprefix("gitdir:").strip())
    git_dir = Path(os.path.realpath(workspace / target))
    st = _lstat(git_dir)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return None
    try:
        with open(git_dir / "gitdir", "rb") as f:
            back = f.read(4097).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return git_dir if os.path.realpath(back) == os.path.realpath(dot_git) else None


def workspace_marker(paths: Paths) -> Path:
    """Where this workspace's id is kept: in its own git folder, which a clone never copies, or
    (not a git work tree we can vouch for) in its ``.PseudoClaude`` folder."""
    workspace = Path(os.path.realpath(paths.workspace))
    dot_git = workspace / ".git"
    st = _lstat(dot_git)
    if st is not None and stat.S_ISDIR(st.st_mode):
        return dot_git / GIT_MARKER
    if st is not None and stat.S_ISREG(st.st_mode):
        git_dir = _worktree_git_dir(workspace, dot_git)
        if git_dir is not None:
            return git_dir / GIT_MARKER
    return workspace / PROJECT_STORE_REL.parent / PLAIN_MARKER


def _read_id(paths: Paths, fs: FS) -> str | None:
    try:
        data = fs.read_bytes(workspace_marker(paths), max_bytes=256)
    except (FileNotFoundError, NotADirectoryError, UnsafePathError):
        return None
    text = data.decode("ascii", "replace").strip()
    return text if _ID_RE.fullmatch(text) else None


def workspace_id(paths: Paths, fs: FS, *, create: bool = False) -> str | None:
    """This repository's id (see the module's doc); None while it has none, unless ``create``."""
    return _ensure_id(paths, fs) if create else _read_id(paths, fs)


def trust_file(paths: Paths, fs: FS | None = None) -> Path | None:
    """The trust record of this workspace's id; None while the workspace has no id."""
    ident = _read_id(paths, fs or FS())
    return None if ident is None else paths.home / TRUST_DIR / f"{ident}.json"


def is_recorded(paths: Paths, fs: FS) -> bool:
    """Whether trust is recorded for this repository (its marker's id has a record here).

    No marker, no record or a damaged one: False. Any other I/O error is raised: a disk hiccup
    must fail the read or the batch (which is retried), not quietly turn the store untrusted.
    """
    ident = _read_id(paths, fs)
    if ident is None:
        return False
    try:
        data = fs.read_bytes(paths.home / TRUST_DIR / f"{ident}.json", max_bytes=MAX_RECORD_BYTES)
    except (FileNotFoundError, NotADirectoryError, UnsafePathError):
        return False
    try:
        record = json.loads(data)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("id") == ident


def _ensure_id(paths: Paths, fs: FS) -> str:
    """This workspace's id, creating its marker (no-clobber, never through a symlink) if absent."""
    ident = _read_id(paths, fs)
    if ident is not None:
        return ident
    marker = workspace_marker(paths)
    if marker.name == PLAIN_MARKER:
        fs.makedirs(marker.parent, 0o755)  # refuses a symlinked .PseudoClaude
    ident = secrets.token_hex(16)
    try:
        fs.unlink(marker)  # a damaged marker (not a symlink target: unlink removes the link)
    except IsADirectoryError:
        raise UnsafePathError(21, "workspace id marker is a folder", str(marker)) from None
    fs.create_durable(marker, (ident + "\n").encode(), 0o644)
    return ident


def record_trust(paths: Paths, fs: FS, *, how: str) -> None:
    """Record that this workspace's project store may be used (``how``: why, for a person)."""
    if _lstat(Path(os.path.realpath(paths.workspace))) is None:
        return  # no workspace folder: nothing a record could name
    from memory.model import rfc3339, utcnow

    ident = _ensure_id(paths, fs)
    path = paths.home / TRUST_DIR / f"{ident}.json"
    fs.makedirs(path.parent, 0o700)
    record = {
        "id": ident,
        "workspace": os.path.realpath(paths.workspace),
        "how": how,
        "time": rfc3339(utcnow()),
    }
    fs.atomic_write(path, (json.dumps(record, indent=1) + "\n").encode(), 0o600)


def has_content(store: Store) -> bool:
    """Whether the project folder holds anything a prompt could get (a note or a ``MEMORY.md``).

    One listing, no reads: this runs before every Run's index read.
    """
    return any(name.endswith(".md") for name in store.entries())


def project_trusted(layout: StoreLayout) -> bool:
    """True when the project store may enter prompts and extraction: trust is recorded, or there
    is no project level or nothing in its store (then nothing needs trusting)."""
    if not layout.has_project_level:
        return True
    if is_recorded(layout.paths, layout.fs):
        return True
    return not has_content(layout.project)


def needs_asking(paths: Paths, fs: FS) -> bool:
    """``not project_trusted`` of this workspace's layout, from this module's imports alone (no
    pydantic, no YAML): the app asks it before the stores' modules are loaded. The same listing:
    the project level exists (its folder is not the user store's), no trust is recorded, and the
    folder — refused, as ``Store.entries`` refuses it, when it or a folder between it and the
    workspace is a symlink or not a folder — holds a ``.md``."""
    project = paths.project_store
    if os.path.realpath(project) == os.path.realpath(paths.user_store):
        return False  # no project level
    if is_recorded(paths, fs):
        return False
    folder, chain = Path(project), [Path(project)]
    cur = folder.parent
    while cur != paths.workspace and paths.workspace in cur.parents:
        chain.append(cur)
        cur = cur.parent
    for p in chain:
        try:
            st = fs.lstat(p)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(st.st_mode):  # a symlink too (lstat)
            return False
    try:
        return any(name.endswith(".md") for name in fs.listdir(folder))
    except FileNotFoundError:
        return False

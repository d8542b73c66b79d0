"""Trust of a project store (DESIGN.md §11): a store that came with a cloned repository enters
no prompt and no extraction request until the person trusts it once for that workspace.

A record per workspace lives under ``$PSEUDOCLAUDE_HOME/trust/``, keyed by the workspace's real
path, and carries the workspace folder's inode: a different repository cloned later at the same
path is a new folder, so it is not trusted by an old record. (An inode can be reused after a
delete; the check is a guard against accidents, the path alone would be none.) A mismatch or a
damaged record means "not trusted": the person is asked again, nothing is let in by mistake.

A store our own code creates is trusted from the start: the transaction records trust when it
writes into a project store that has nothing in it yet (memory/transaction.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .fs import FS, UnsafePathError
from .model import Level, Note, rfc3339, utcnow
from .paths import Paths, workspace_key

if TYPE_CHECKING:
    from .store import Store
    from .stores import MemoryStores

__all__ = [
    "UNTRUSTED_REASON",
    "has_content",
    "is_recorded",
    "project_trusted",
    "record_trust",
    "trust_file",
    "untrusted_cards",
]

TRUST_DIR = "trust"
MAX_RECORD_BYTES = 64 * 1024

UNTRUSTED_REASON = (
    "the project store came with this workspace and is not trusted yet, so memory does not use "
    "or change it (trust it once: answer y when the app asks, or run "
    "`pseudoclaude -p --trust-project-memory ...`)"
)


def trust_file(paths: Paths) -> Path:
    return paths.home / TRUST_DIR / f"{workspace_key(Path(os.path.realpath(paths.workspace)))}.json"


def _workspace_inode(paths: Paths) -> int | None:
    try:
        return os.stat(os.path.realpath(paths.workspace)).st_ino
    except OSError:
        return None


def is_recorded(paths: Paths, fs: FS) -> bool:
    """Whether trust is recorded for this workspace folder (same real path, same folder).

    No record or a damaged one: False. Any other I/O error is raised: a disk hiccup must fail
    the read or the batch (which is retried), not quietly turn the store untrusted.
    """
    try:
        data = fs.read_bytes(trust_file(paths), max_bytes=MAX_RECORD_BYTES)
    except (FileNotFoundError, NotADirectoryError, UnsafePathError):
        return False
    try:
        record = json.loads(data)
    except ValueError:
        return False
    if not isinstance(record, dict):
        return False
    inode = _workspace_inode(paths)
    return (
        inode is not None
        and record.get("workspace") == os.path.realpath(paths.workspace)
        and record.get("inode") == inode
    )


def record_trust(paths: Paths, fs: FS, *, how: str) -> None:
    """Record that this workspace's project store may be used (``how``: why, for a person)."""
    inode = _workspace_inode(paths)
    if inode is None:
        return  # no workspace folder: nothing a record could name
    path = trust_file(paths)
    fs.makedirs(path.parent, 0o700)
    record = {
        "workspace": os.path.realpath(paths.workspace),
        "inode": inode,
        "how": how,
        "time": rfc3339(utcnow()),
    }
    fs.atomic_write(path, (json.dumps(record, indent=1) + "\n").encode(), 0o600)


def has_content(store: Store) -> bool:
    """Whether the project folder holds anything a prompt could get (a note or a ``MEMORY.md``).

    One listing, no reads: this runs before every Run's index read.
    """
    return any(name.endswith(".md") for name in store.entries())


def project_trusted(stores: MemoryStores) -> bool:
    """True when the project store may enter prompts and extraction: trust is recorded, or there
    is no project level or nothing in its store (then nothing needs trusting)."""
    if not stores.has_project_level:
        return True
    if is_recorded(stores.paths, stores.fs):
        return True
    return not has_content(stores.project)


def untrusted_cards(stores: MemoryStores) -> list[Note]:
    """The project cards waiting for the person's trust (for the app's modal); [] when trusted."""
    if project_trusted(stores):
        return []
    return stores.notes(Level.PROJECT)

"""Where things live: the workspace, the two stores, and the app's own folders."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

PROJECT_STORE_REL = Path(".PseudoClaude") / "memory"


def pseudoclaude_home() -> Path:
    env = os.environ.get("PSEUDOCLAUDE_HOME")
    home = Path(env).expanduser() if env else Path.home() / ".PseudoClaude"
    return Path(os.path.abspath(home))


def resolve_workspace(start: Path | str) -> Path:
    """The git top level of ``start`` if inside a repository, else ``start`` itself (real paths).

    Found by looking for ``.git`` upwards rather than running git: no subprocess on start-up,
    and a work tree whose ``.git`` is a file (worktrees, submodules) counts too.
    """
    here = Path(os.path.realpath(start))
    cur = here
    while True:
        if (cur / ".git").exists():
            return cur
        if cur.parent == cur:
            return here
        cur = cur.parent


def workspace_key(workspace: Path) -> str:
    """A stable, filesystem-safe key for per-workspace files (history, worker lock)."""
    real = str(workspace)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(real).name)[:32].strip("-.") or "root"
    return f"{name}-{digest}"


@dataclass(frozen=True)
class Paths:
    home: Path
    workspace: Path

    @classmethod
    def for_workspace(cls, workspace: Path | str, home: Path | None = None) -> Paths:
        return cls(home=Path(home) if home is not None else pseudoclaude_home(), workspace=Path(workspace))

    @property
    def project_store(self) -> Path:
        return self.workspace / PROJECT_STORE_REL

    @property
    def user_store(self) -> Path:
        return self.home / "memory"

    @property
    def spool_dir(self) -> Path:
        return self.home / "spool"

    @property
    def journal_dir(self) -> Path:
        return self.home / "journal"

    @property
    def locks_dir(self) -> Path:
        return self.home / "locks"

    @property
    def history_dir(self) -> Path:
        return self.home / "history" / workspace_key(self.workspace)

    @property
    def sessions_dir(self) -> Path:
        return self.home / "sessions"

    @property
    def config_file(self) -> Path:
        return self.home / "config.toml"

    @property
    def store_lock(self) -> Path:
        # One lock for every store transaction under this home: the user store is shared by
        # all workspaces, and transactions take milliseconds, so one lock costs nothing.
        return self.locks_dir / "stores.lock"

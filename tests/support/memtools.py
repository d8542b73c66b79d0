"""Helpers shared by memory tests: deterministic environments, batches, and tree snapshots."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from memory.constants import Action, Level, NoteType
from memory.model import NoteMeta, Operation
from memory.store.frontmatter import dump_note
from memory.store.fs import FS
from memory.store.paths import Paths
from memory.store.stores import MemoryStores
from memory.store.trust import record_trust

FIXED = dt.datetime(2026, 11, 30, 4, 32, 46, tzinfo=dt.UTC)


def fixed_clock() -> dt.datetime:
    return FIXED


def make_env(root: Path, fs: FS | None = None, *, trusted: bool = True) -> MemoryStores:
    """A workspace (a git repo folder) and a PSEUDOCLAUDE_HOME under ``root``.

    ``trusted``: the workspace's project store is trusted, as if this user's
    PseudoClaude had made it: most tests hand-write project notes to test something else.
    """
    ws = root / "ws"
    (ws / ".git").mkdir(parents=True, exist_ok=True)
    home = root / "home"
    home.mkdir(exist_ok=True)
    stores = MemoryStores(os.path.realpath(ws), home, fs=fs or FS(), clock=fixed_clock)
    if trusted:
        trust_workspace(ws, home)
    return stores


def trust_workspace(workspace: Path | str, home: Path | None = None) -> None:
    """Record trust in ``workspace``'s project store (under ``home``, default $PSEUDOCLAUDE_HOME),
    for tests whose hand-written project notes stand for the user's own. A plain FS:
    a test's fault-injecting one must not see this setup write."""
    record_trust(Paths.for_workspace(os.path.realpath(workspace), home), FS(), how="test fixture")


def write_note(
    stores: MemoryStores,
    level: Level,
    filename: str,
    title: str,
    body: str,
    type_: NoteType = NoteType.PROJECT_KNOWLEDGE,
    summary: str = "",
) -> Path:
    folder = stores.store(level).dir
    folder.mkdir(parents=True, exist_ok=True)
    meta = NoteMeta(
        title=title,
        summary=summary,
        type=type_,
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        source="seed",
    )
    path = folder / filename
    path.write_bytes(dump_note(meta, body))
    return path


def two_card_workspace(tmp_path: Path, *, trusted: bool) -> tuple[Path, MemoryStores]:
    """A workspace (a git folder under ``tmp_path``) with one project and one user card; its
    project store trusted or not. Returns the resolved workspace path and its stores."""
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    stores = MemoryStores(os.path.realpath(ws))
    write_note(stores, Level.PROJECT, "project_knowledge_deploy.md", "Deploy on Fridays", "ok")
    write_note(stores, Level.USER, "project_knowledge_tabs.md", "Tabs not spaces", "tabs")
    if trusted:
        trust_workspace(ws)
    return Path(os.path.realpath(ws)), stores


def op(action: str, level: str, **kw: object) -> Operation:
    return Operation(action=Action(action), level=Level(level), **kw)  # type: ignore[arg-type]


def create(
    level: str, title: str, content: str = "body", type_: str = "project_knowledge", **kw: object
) -> Operation:
    return op("create", level, type=NoteType(type_), title=title, content=content, **kw)


def tree(folder: Path) -> dict[str, bytes]:
    """Every regular file below ``folder`` (relative path -> bytes); trash names normalised."""
    out: dict[str, bytes] = {}
    if not folder.exists():
        return out
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink():
            rel = p.relative_to(folder).as_posix()
            if rel.startswith(".trash/"):
                # Trash names carry the random transaction id; compare by content.
                rel = ".trash/" + rel.split("-", 2)[-1]
            out[rel] = p.read_bytes()
    return out


def stores_state(stores: MemoryStores) -> tuple[dict[str, bytes], dict[str, bytes]]:
    return tree(stores.project.dir), tree(stores.user.dir)


def leftovers(stores: MemoryStores) -> list[str]:
    """Temp, staging and journal files anywhere they could be left."""
    found = []
    for folder in (stores.project.dir, stores.user.dir, stores.paths.journal_dir, stores.paths.history_dir):
        if folder.exists():
            for p in folder.rglob("*"):
                if p.name.startswith(".pc-") or (folder == stores.paths.journal_dir and p.is_file()):
                    found.append(str(p))
    return found

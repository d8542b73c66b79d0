"""Trust of what a cloned repository brings besides its memory store: MCP servers (``.mcp.json``),
custom commands, hooks and permission rules that loosen. None of it runs or reaches the model
until the person says so, as for a cloned project store.

A record is keyed like the store's trust — by the repository's identity (a random id kept where a
clone never copies it, ``memory.store.trust``), not by its path — plus a sha256 of exactly what the
person was shown for each kind: a ``.mcp.json`` whose command changed after it was trusted asks
again. Records live in ``$PSEUDOCLAUDE_HOME/trust/<id>.project.json`` (mode 0600). A missing,
damaged or foreign record means "not trusted".
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Literal

from memory.store.fs import FS, UnsafePathError
from memory.store.paths import Paths
from memory.store.trust import MAX_RECORD_BYTES, TRUST_DIR, workspace_id

__all__ = ["KINDS", "Kind", "ProjectTrust", "digest"]

Kind = Literal["mcp", "commands", "hooks", "permissions"]
KINDS: tuple[Kind, ...] = ("mcp", "commands", "hooks", "permissions")


def digest(content: bytes | str) -> str:
    """``sha256:<hex>`` of what was shown (text is taken as UTF-8)."""
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    return "sha256:" + hashlib.sha256(data).hexdigest()


class ProjectTrust:
    """This workspace's trust records for what its repository brings. Blocking (small files)."""

    def __init__(self, workspace: Path, home: Path | None = None, fs: FS | None = None) -> None:
        self.paths = Paths.for_workspace(workspace, home)
        self.fs = fs or FS()

    def _record_path(self, ident: str) -> Path:
        return self.paths.home / TRUST_DIR / f"{ident}.project.json"

    def _read(self) -> tuple[str | None, dict[str, str]]:
        ident = workspace_id(self.paths, self.fs)
        if ident is None:
            return None, {}
        try:
            data = self.fs.read_bytes(self._record_path(ident), max_bytes=MAX_RECORD_BYTES)
            record = json.loads(data)
        except (FileNotFoundError, NotADirectoryError, UnsafePathError, ValueError):
            return ident, {}
        kinds = record.get("kinds") if isinstance(record, dict) and record.get("id") == ident else None
        if not isinstance(kinds, dict):
            return ident, {}
        return ident, {k: v for k, v in kinds.items() if isinstance(k, str) and isinstance(v, str)}

    def trusted(self, kind: Kind, what: str) -> bool:
        """Whether ``what`` (a ``digest``) is what the person trusted for ``kind`` here."""
        return self._read()[1].get(kind) == what

    def trust(self, kind: Kind, what: str) -> None:
        """Record the person's yes to ``what`` (a ``digest``) for ``kind``; other kinds kept."""
        if kind not in KINDS:
            raise ValueError(f"not a kind of project trust: {kind!r}")
        _, kinds = self._read()
        ident = workspace_id(self.paths, self.fs, create=True)
        assert ident is not None
        kinds[kind] = what
        path = self._record_path(ident)
        self.fs.makedirs(path.parent, 0o700)
        record = {"id": ident, "workspace": os.path.realpath(self.paths.workspace), "kinds": kinds}
        self.fs.atomic_write(path, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode(), 0o600)

    def forget(self, kind: Kind) -> None:
        """Take back the yes for ``kind`` (it is asked again)."""
        ident, kinds = self._read()
        if ident is None or kind not in kinds:
            return
        del kinds[kind]
        record = {"id": ident, "workspace": os.path.realpath(self.paths.workspace), "kinds": kinds}
        self.fs.atomic_write(
            self._record_path(ident), (json.dumps(record, indent=1, sort_keys=True) + "\n").encode(), 0o600
        )

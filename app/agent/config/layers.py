"""The three TOML files that configure permission rules and hooks, read the same way for both.

- the user's ``$PSEUDOCLAUDE_HOME/config.toml`` (this person's own),
- the project's ``.PseudoClaude/settings.toml`` (shared through git: it came with the clone, so
  what it loosens or runs waits for the person's trust: its allow rules, its hooks, its
  ``permission_mode = "accept-edits"``),
- the project's ``.PseudoClaude/settings.local.toml`` (personal, kept out of git). A local file
  that git does track came with the clone like the shared one, and is treated as shared.

A missing file is an empty layer; a damaged one is an empty layer with a one-line ``error``.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypedDict

from app.agent.config.project_trust import Kind, ProjectTrust, digest
from memory.store.paths import Paths

__all__ = [
    "LOCAL_SETTINGS_REL",
    "MAX_SETTINGS_BYTES",
    "PROJECT_SETTINGS_REL",
    "ConfigLayer",
    "LayerTables",
    "PendingTrust",
    "Scope",
    "is_trusted",
    "local_settings_path",
    "project_settings_path",
    "read_layers",
    "user_config_path",
]

Scope = Literal["user", "project", "local", "flag", "command"]

PROJECT_SETTINGS_REL = Path(".PseudoClaude") / "settings.toml"
LOCAL_SETTINGS_REL = Path(".PseudoClaude") / "settings.local.toml"
# A settings file is a few rules and hooks; anything bigger is not one.
MAX_SETTINGS_BYTES = 1024 * 1024


def user_config_path(home: Path | None = None) -> Path:
    return Paths.for_workspace(Path("."), home).config_file


def project_settings_path(workspace: Path) -> Path:
    return Path(workspace) / PROJECT_SETTINGS_REL


def local_settings_path(workspace: Path) -> Path:
    return Path(workspace) / LOCAL_SETTINGS_REL


class LayerTables(TypedDict, total=False):
    """The keys of a settings file the layers are read for, as TOML gave them: each loader (the
    permission rules and mode, the hooks) checks its own and says what it refuses. A file's other
    keys are the settings' (app/agent/config/settings.py)."""

    permissions: object
    hooks: object
    permission_mode: object


def _tables(doc: Mapping[str, object]) -> LayerTables:
    tables = LayerTables()
    if "permissions" in doc:
        tables["permissions"] = doc["permissions"]
    if "hooks" in doc:
        tables["hooks"] = doc["hooks"]
    if "permission_mode" in doc:
        tables["permission_mode"] = doc["permission_mode"]
    return tables


@dataclass(frozen=True)
class ConfigLayer:
    scope: Literal["user", "project", "local"]
    path: Path
    data: LayerTables = field(default_factory=LayerTables)
    error: str | None = None
    # Came with the repository (the project's file, or a local one git tracks): what it loosens
    # or runs needs the person's trust.
    shared: bool = False

    @property
    def label(self) -> str:
        """How the file is named in messages: relative for the project's, the path for the user's."""
        if self.scope == "user":
            return str(self.path)
        return str(PROJECT_SETTINGS_REL if self.scope == "project" else LOCAL_SETTINGS_REL)


@dataclass(frozen=True)
class PendingTrust:
    """What a project brings that waits for the person's yes: show ``shown``, then on yes call
    ``ProjectTrust(workspace, home).trust(kind, digest)``."""

    kind: Kind
    shown: str
    digest: str

    @classmethod
    def of(cls, kind: Kind, shown: str) -> PendingTrust:
        return cls(kind=kind, shown=shown, digest=digest(shown))


def is_trusted(
    workspace: Path, home: Path | None, pending: PendingTrust, trust: ProjectTrust | None = None
) -> bool:
    """Whether the person said yes to exactly ``pending.shown`` for its kind in this workspace."""
    trust = trust or ProjectTrust(Path(workspace), home)
    return trust.trusted(pending.kind, pending.digest)


def _read_toml(path: Path) -> tuple[LayerTables, str | None]:
    try:
        if os.path.lexists(path) and not path.is_file():
            return LayerTables(), f"{path}: not a regular file; ignored"
        with open(path, "rb") as f:
            raw = f.read(MAX_SETTINGS_BYTES + 1)
    except FileNotFoundError:
        return LayerTables(), None
    except OSError as e:
        return LayerTables(), f"{path}: cannot read ({e.strerror or e}); ignored"
    if len(raw) > MAX_SETTINGS_BYTES:
        return LayerTables(), f"{path}: larger than {MAX_SETTINGS_BYTES // 1024} KiB; ignored"
    try:
        return _tables(tomllib.loads(raw.decode("utf-8"))), None
    except UnicodeDecodeError:
        return LayerTables(), f"{path}: not UTF-8 text; ignored"
    except tomllib.TOMLDecodeError as e:
        return LayerTables(), f"{path}: invalid TOML ({' '.join(str(e).split())}); ignored"


def tracked_by_git(workspace: Path, rel: Path) -> bool:
    """Whether git tracks ``rel`` in ``workspace`` (False when git or the repository is missing)."""
    if not (Path(workspace) / rel).is_file():
        return False
    try:
        done = subprocess.run(
            ["git", "-C", str(workspace), "ls-files", "--error-unmatch", "--", rel.as_posix()],
            capture_output=True,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def read_layers(workspace: Path, home: Path | None = None) -> tuple[ConfigLayer, ...]:
    """The user's, the project's and the local layer, in that order. Blocking (small files, and one
    ``git ls-files`` when a local file exists): call it off an event loop."""
    workspace = Path(workspace)
    layers: list[ConfigLayer] = []
    user = user_config_path(home)
    data, error = _read_toml(user)
    layers.append(ConfigLayer("user", user, data, error))
    project = project_settings_path(workspace)
    data, error = _read_toml(project)
    layers.append(ConfigLayer("project", project, data, error, shared=True))
    local = local_settings_path(workspace)
    data, error = _read_toml(local)
    layers.append(
        ConfigLayer("local", local, data, error, shared=tracked_by_git(workspace, LOCAL_SETTINGS_REL))
    )
    return tuple(layers)

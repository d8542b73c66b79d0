"""Which MCP servers may start: the user's always, a project's only once the person trusted
exactly what they were shown of its ``.mcp.json`` (a changed command or URL asks again)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from app.agent.config.project_trust import ProjectTrust, digest
from app.agent.extensions.mcp.config import ServerConfig, read_project_servers, read_user_servers
from memory.store.paths import Paths, pseudoclaude_home

__all__ = ["LoadedServers", "ProjectServers", "load_servers", "project_servers", "trust_project_servers"]


@dataclass(frozen=True)
class ProjectServers:
    """A project's ``.mcp.json`` as the person is asked about it: one line per server (its
    name, then its command line or URL, secrets hidden) and the digest of exactly those lines."""

    servers: tuple[ServerConfig, ...] = ()
    lines: tuple[str, ...] = ()
    digest: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The lines as one text (what ``digest`` is of)."""
        return "\n".join(self.lines)


@dataclass(frozen=True)
class LoadedServers:
    """The servers to start (the user's, then a trusted project's; sorted by name), the
    project's servers still waiting for trust (their names), and one-line warnings."""

    servers: tuple[ServerConfig, ...] = ()
    waiting: tuple[str, ...] = ()
    project: ProjectServers = field(default_factory=ProjectServers)
    warnings: tuple[str, ...] = ()


def project_servers(workspace: Path) -> ProjectServers:
    """The workspace's ``.mcp.json`` servers with their trust lines and digest."""
    servers, warnings = read_project_servers(workspace)
    # The fingerprints of hidden values are part of what is shown: a changed secret or
    # environment value asks again without being shown.
    lines = tuple(f"{s.name}: {s.describe(fingerprint=True)}" for s in servers)
    return ProjectServers(tuple(servers), lines, digest("\n".join(lines)) if lines else "", tuple(warnings))


def trust_project_servers(workspace: Path, project: ProjectServers, home: Path | None = None) -> None:
    """Record the person's yes to ``project`` (what they were shown) for this workspace."""
    if project.digest:
        ProjectTrust(workspace, home).trust("mcp", project.digest)


def load_servers(workspace: Path, home: Path | None = None, *, trust_project: bool = False) -> LoadedServers:
    """The user's servers from ``config.toml`` under ``home`` (default ``$PSEUDOCLAUDE_HOME``)
    and the workspace's ``.mcp.json`` servers when trusted (or ``trust_project``, for one run
    the person allowed on the command line). A project server named like a user's is left out:
    the user's own configuration wins."""
    home = Path(home) if home is not None else pseudoclaude_home()
    user, warnings = read_user_servers(Paths(home=home, workspace=home).config_file)
    project = project_servers(workspace)
    warnings += project.warnings
    allowed = bool(project.servers) and (
        trust_project or ProjectTrust(workspace, home).trusted("mcp", project.digest)
    )
    taken = {s.name for s in user}
    servers = list(user)
    for s in project.servers:
        if s.name in taken:
            warnings.append(
                f"{workspace / '.mcp.json'}: MCP server {s.name!r} left out: the user's config has one"
            )
        elif allowed:
            servers.append(s)
    waiting = () if allowed else tuple(s.name for s in project.servers if s.name not in taken)
    return LoadedServers(tuple(sorted(servers, key=lambda s: s.name)), waiting, project, tuple(warnings))

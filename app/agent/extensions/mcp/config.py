"""MCP servers as configured: ``[mcp_servers.NAME]`` in ``config.toml`` and a project's
``.mcp.json`` in the shape Claude Code reads (``{"mcpServers": {NAME: {...}}}``).

A server object keeps its values as written (``${VAR}`` unexpanded): what the person is shown,
and what their trust covers, does not change when a variable does. The values are expanded when
the server starts (:meth:`StdioServer.resolved`, :meth:`HttpServer.resolved`); a variable that
is not set and has no default makes that server fail to start, with the variable named.

Header values and environment values are secrets until shown otherwise: ``describe()`` shows a
value only when it is one ``${VAR}`` reference (a name, not a secret), keeps an auth scheme word
(``Authorization: Bearer ***``), and passes command lines and URLs through the memory store's
redaction.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memory.text.lines import one_line
from memory.text.redact import redact

__all__ = [
    "HttpServer",
    "ServerConfig",
    "Source",
    "StdioServer",
    "UnsetVariableError",
    "expand",
    "parse_servers",
    "read_project_servers",
    "read_user_servers",
]

Source = Literal["user", "project"]

# Claude Code's spelling of each transport; "streamable-http" is the SDK's word for "http".
_HTTP_TYPES = {"http": "http", "streamable-http": "http", "sse": "sse"}
_STDIO_KEYS = {"type", "command", "args", "env"}
_HTTP_KEYS = {"type", "url", "headers"}
# A config file is small; one that is not is not read whole.
MAX_CONFIG_BYTES = 1024 * 1024

_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_LONE_REF_RE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_SCHEME_RE = re.compile(r"(Bearer|Basic|Token|Bot|Digest|ApiKey)\s+(.*)", re.IGNORECASE | re.DOTALL)


class UnsetVariableError(ValueError):
    """A ``${VAR}`` without a default names a variable that is not set."""


def expand(value: str, environ: Mapping[str, str] | None = None) -> str:
    """``${VAR}`` and ``${VAR:-default}`` replaced from ``environ`` (default: the process's)."""
    env = os.environ if environ is None else environ

    def one(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        got = env.get(name)
        if got is not None and (got != "" or default is None):
            return got
        if default is not None:
            return default
        raise UnsetVariableError(f"${{{name}}} is not set")

    return _VAR_RE.sub(one, value)


def _hidden(value: str, fingerprint: bool) -> str:
    # A short hash lets a changed secret change what the person is shown (and so what their
    # trust covers) without showing the secret.
    mark = "***"
    if fingerprint:
        mark += "[" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:8] + "]"
    return mark


def _show_secret(value: str, fingerprint: bool, *, scheme: bool = False) -> str:
    if _LONE_REF_RE.fullmatch(value):
        return value
    if scheme and (m := _SCHEME_RE.fullmatch(value)):
        rest = m.group(2)
        return f"{m.group(1)} {rest if _LONE_REF_RE.fullmatch(rest) else _hidden(rest, fingerprint)}"
    return _hidden(value, fingerprint)


@dataclass(frozen=True)
class StdioServer:
    """A server run as a child process speaking MCP on its stdin and stdout."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    source: Source = "user"

    @property
    def transport(self) -> Literal["stdio"]:
        return "stdio"

    def describe(self, *, fingerprint: bool = False) -> str:
        """One line for the screen, a log or a trust question: the command line (redacted),
        then the environment it adds with every value hidden unless it is one ``${VAR}``."""
        line = redact(shlex.join([self.command, *self.args]))
        if self.env:
            line += " (env " + ", ".join(f"{k}={_show_secret(v, fingerprint)}" for k, v in self.env) + ")"
        return one_line(line)

    def resolved(self, environ: Mapping[str, str] | None = None) -> StdioServer:
        """This server with every ``${VAR}`` expanded; raises :class:`UnsetVariableError`."""
        return StdioServer(
            self.name,
            expand(self.command, environ),
            tuple(expand(a, environ) for a in self.args),
            tuple((k, expand(v, environ)) for k, v in self.env),
            self.source,
        )


@dataclass(frozen=True)
class HttpServer:
    """A server reached over HTTP: streamable HTTP, or the older SSE transport."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    kind: Literal["http", "sse"] = "http"
    source: Source = "user"

    @property
    def transport(self) -> Literal["http", "sse"]:
        return self.kind

    def describe(self, *, fingerprint: bool = False) -> str:
        """One line: the transport, the URL (redacted), and the headers with values hidden
        (``Authorization: Bearer ***``) unless a value is one ``${VAR}``."""
        line = f"{self.kind} {redact(self.url)}"
        if self.headers:
            shown = ", ".join(f"{k}: {_show_secret(v, fingerprint, scheme=True)}" for k, v in self.headers)
            line += f" (headers {shown})"
        return one_line(line)

    def resolved(self, environ: Mapping[str, str] | None = None) -> HttpServer:
        """This server with every ``${VAR}`` expanded; raises :class:`UnsetVariableError`."""
        return HttpServer(
            self.name,
            expand(self.url, environ),
            tuple((k, expand(v, environ)) for k, v in self.headers),
            self.kind,
            self.source,
        )


ServerConfig = StdioServer | HttpServer


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what} must be a list of strings")
    return tuple(value)


def _pairs(value: Any, what: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{what} must be a table of strings")
    return tuple(value.items())


def _one_server(name: str, entry: Any, source: Source) -> tuple[ServerConfig, list[str]]:
    """One entry; raises ``ValueError`` (one line) for one that cannot be used."""
    if not isinstance(entry, dict):
        raise ValueError("must be a table")
    kind = entry.get("type")
    if kind is not None and kind != "stdio" and kind not in _HTTP_TYPES:
        raise ValueError(f"unknown type {one_line(kind, 40)!r} (stdio, http or sse)")
    is_http = kind in _HTTP_TYPES or (kind is None and "url" in entry and "command" not in entry)
    known = _HTTP_KEYS if is_http else _STDIO_KEYS
    notes = [f"key {k!r} ignored" for k in entry if k not in known]
    server: ServerConfig
    if is_http:
        url = entry.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ValueError("needs a 'url'")
        if not re.match(r"(https?://|\$\{)", url.strip(), re.IGNORECASE):
            raise ValueError("'url' must be an http:// or https:// URL")
        http_kind: Literal["http", "sse"] = "sse" if _HTTP_TYPES.get(kind or "http") == "sse" else "http"
        server = HttpServer(name, url.strip(), _pairs(entry.get("headers"), "'headers'"), http_kind, source)
    else:
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ValueError("needs a 'command' (or a 'url')")
        server = StdioServer(
            name, command, _strings(entry.get("args"), "'args'"), _pairs(entry.get("env"), "'env'"), source
        )
    return server, notes


def parse_servers(table: Any, source: Source, origin: str) -> tuple[list[ServerConfig], list[str]]:
    """The servers of one ``{NAME: entry}`` table (``[mcp_servers]`` or ``mcpServers``),
    sorted by name, and one-line warnings (naming ``origin``) for the entries left out."""
    if table is None:
        return [], []
    if not isinstance(table, dict):
        return [], [f"{origin}: the MCP servers must be a table of servers"]
    servers: list[ServerConfig] = []
    warnings: list[str] = []
    for name in sorted(table):
        label = f"{origin}: MCP server {one_line(name, 60)!r}"
        if not isinstance(name, str) or not name.strip() or not name.isprintable():
            warnings.append(f"{origin}: an MCP server needs a printable name")
            continue
        try:
            server, notes = _one_server(name, table[name], source)
        except ValueError as e:
            warnings.append(f"{label} left out: {one_line(e)}")
            continue
        servers.append(server)
        warnings.extend(f"{label}: {note}" for note in notes)
    return servers, warnings


def _read_capped(path: Path) -> bytes | None:
    """The file's bytes, ``None`` when it does not exist; ``ValueError`` when it is too large."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(f"over {MAX_CONFIG_BYTES // 1024} KiB")
    return data


def read_user_servers(config_file: Path) -> tuple[list[ServerConfig], list[str]]:
    """``[mcp_servers.NAME]`` of the user's ``config.toml`` (none when it has no such table)."""
    try:
        data = _read_capped(config_file)
        doc = tomllib.loads(data.decode("utf-8")) if data is not None else {}
    except (OSError, ValueError) as e:
        return [], [f"{config_file}: MCP servers not read: {one_line(e)}"]
    return parse_servers(doc.get("mcp_servers"), "user", str(config_file))


def read_project_servers(workspace: Path) -> tuple[list[ServerConfig], list[str]]:
    """``mcpServers`` of the workspace's ``.mcp.json`` (none when there is no such file)."""
    path = Path(workspace) / ".mcp.json"
    try:
        data = _read_capped(path)
        doc = json.loads(data) if data is not None else {}
    except (OSError, ValueError) as e:
        return [], [f"{path}: not read: {one_line(e)}"]
    if not isinstance(doc, dict):
        return [], [f"{path}: not read: expected a JSON object"]
    return parse_servers(doc.get("mcpServers"), "project", str(path))

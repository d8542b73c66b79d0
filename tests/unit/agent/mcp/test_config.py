"""MCP server configuration: both shapes, ``${VAR}`` expansion, and secrets hidden in describe()."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.agent.extensions.mcp import HttpServer, StdioServer, UnsetVariableError, expand, parse_servers
from app.agent.extensions.mcp.config import read_project_servers, read_user_servers

pytestmark = pytest.mark.timeout(30)

# A .mcp.json as people commit it for Claude Code.
CLAUDE_CODE_MCP_JSON = {
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
        },
        "filesystem": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/projects"],
            "env": {},
        },
        "sentry": {
            "type": "http",
            "url": "https://mcp.sentry.dev/mcp",
            "headers": {"Authorization": "Bearer ${SENTRY_TOKEN:-none}"},
        },
        "legacy": {"type": "sse", "url": "${LEGACY_URL:-http://localhost:9000/sse}"},
    }
}


def test_a_claude_code_mcp_json_is_read_unchanged(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps(CLAUDE_CODE_MCP_JSON, indent=2))
    servers, warnings = read_project_servers(tmp_path)
    assert warnings == []
    by_name = {s.name: s for s in servers}
    assert [s.name for s in servers] == ["filesystem", "github", "legacy", "sentry"]
    assert by_name["github"] == StdioServer(
        "github",
        "npx",
        ("-y", "@modelcontextprotocol/server-github"),
        (("GITHUB_PERSONAL_ACCESS_TOKEN", "${GITHUB_TOKEN}"),),
        "project",
    )
    assert by_name["sentry"] == HttpServer(
        "sentry",
        "https://mcp.sentry.dev/mcp",
        (("Authorization", "Bearer ${SENTRY_TOKEN:-none}"),),
        "http",
        "project",
    )
    assert isinstance(by_name["legacy"], HttpServer) and by_name["legacy"].transport == "sse"
    assert by_name["filesystem"].transport == "stdio"


def test_the_user_config_table_is_read(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        'model = "x"\n'
        "[mcp_servers.local]\n"
        'command = "python"\nargs = ["-m", "server"]\nenv = { TOKEN = "${MY_TOKEN}" }\n'
        "[mcp_servers.remote]\n"
        'url = "https://example.test/mcp"\nheaders = { "X-Api-Key" = "abc" }\n'
    )
    servers, warnings = read_user_servers(config)
    assert warnings == []
    assert servers == [
        StdioServer("local", "python", ("-m", "server"), (("TOKEN", "${MY_TOKEN}"),), "user"),
        HttpServer("remote", "https://example.test/mcp", (("X-Api-Key", "abc"),), "http", "user"),
    ]


def test_no_config_file_means_no_servers(tmp_path: Path) -> None:
    assert read_user_servers(tmp_path / "config.toml") == ([], [])
    assert read_project_servers(tmp_path) == ([], [])


def test_an_entry_that_cannot_be_used_is_left_out_with_one_line(tmp_path: Path) -> None:
    servers, warnings = parse_servers(
        {
            "ok": {"command": "run"},
            "nocmd": {"args": ["x"]},
            "badtype": {"type": "websocket", "url": "ws://x"},
            "badargs": {"command": "run", "args": "not a list"},
            "badurl": {"type": "http", "url": "ftp://x"},
            "extra": {"command": "run", "timeout": 5},
        },
        "project",
        ".mcp.json",
    )
    assert [s.name for s in servers] == ["extra", "ok"]
    assert len(warnings) == 5 and all(
        "\n" not in w and w.startswith(".mcp.json: MCP server") for w in warnings
    )
    assert any("'badtype' left out: unknown type 'websocket'" in w for w in warnings)
    assert any("'extra': key 'timeout' ignored" in w for w in warnings)
    _, broken = read_project_servers_from(tmp_path, "{not json")
    assert len(broken) == 1 and "not read" in broken[0]


def read_project_servers_from(tmp_path: Path, text: str) -> tuple[list[object], list[str]]:
    (tmp_path / ".mcp.json").write_text(text)
    servers, warnings = read_project_servers(tmp_path)
    return list(servers), warnings


def test_variables_expand_with_defaults() -> None:
    env = {"A": "1", "EMPTY": ""}
    assert expand("x${A}y", env) == "x1y"
    assert expand("${B:-dflt}", env) == "dflt"
    assert expand("${EMPTY:-dflt}", env) == "dflt"
    assert expand("${A:-dflt}", env) == "1"
    assert expand("${EMPTY}", env) == ""
    assert expand("no $A or ${ here", env) == "no $A or ${ here"
    with pytest.raises(UnsetVariableError, match=r"\$\{MISSING\} is not set"):
        expand("${MISSING}", env)


def test_resolved_expands_every_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOL_HOME", "/opt/tool")
    monkeypatch.setenv("TOKEN", "s3cret")
    monkeypatch.delenv("PORT", raising=False)
    stdio = StdioServer("s", "${TOOL_HOME}/bin/run", ("--port", "${PORT:-8080}"), (("T", "${TOKEN}"),))
    assert stdio.resolved() == StdioServer("s", "/opt/tool/bin/run", ("--port", "8080"), (("T", "s3cret"),))
    http = HttpServer("h", "https://${PORT:-x.test}/mcp", (("Authorization", "Bearer ${TOKEN}"),))
    assert http.resolved().headers == (("Authorization", "Bearer s3cret"),)
    assert http.resolved().url == "https://x.test/mcp"
    # What the server object holds (and describe() shows) stays as written.
    assert stdio.env == (("T", "${TOKEN}"),)


def test_describe_hides_header_and_env_values() -> None:
    http = HttpServer(
        "h",
        "https://user:pa55word@x.test/mcp?api_key=sk-abcdef0123456789abcdef",
        (
            ("Authorization", "Bearer sk-live-abcdefghijklmnop"),
            ("X-Api-Key", "plainsecretvalue"),
            ("X-Ref", "${MY_KEY}"),
        ),
    )
    shown = http.describe()
    assert "Authorization: Bearer ***" in shown
    assert "X-Api-Key: ***" in shown
    assert "X-Ref: ${MY_KEY}" in shown  # a variable's name is not a secret
    for secret in ("sk-live-abcdefghijklmnop", "plainsecretvalue", "pa55word", "sk-abcdef0123456789abcdef"):
        assert secret not in shown
    stdio = StdioServer(
        "s",
        "npx",
        ("server", "--api-key", "sk-ant-api03-abcdefghijklmnopqrstuvwx"),
        (("DB_PASSWORD", "hunter2"), ("TOKEN", "${TOKEN}"), ("MODE", "${MODE:-fast}")),
    )
    line = stdio.describe()
    assert line.startswith("npx server --api-key ")
    assert "hunter2" not in line and "sk-ant-api03" not in line
    assert "DB_PASSWORD=***" in line and "TOKEN=${TOKEN}" in line and "MODE=***" in line


def test_a_fingerprint_changes_with_the_hidden_value_without_showing_it() -> None:
    a = StdioServer("s", "run", (), (("NODE_OPTIONS", "--require ./a.js"),))
    b = StdioServer("s", "run", (), (("NODE_OPTIONS", "--require ./evil.js"),))
    assert a.describe() == b.describe()
    assert a.describe(fingerprint=True) != b.describe(fingerprint=True)
    assert "evil" not in b.describe(fingerprint=True)

"""The ``web_search`` tool: its inputs (one-line reasons), what the permission window shows, what it
asks, and that it hands the call to the run's web searcher (no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.agent.tools import BUILTIN_TOOLS, ToolContext, ToolResult
from app.agent.tools.base import ToolError, parse_input
from app.agent.tools.builtin.web_search import NOT_AVAILABLE, WebSearch, WebSearchInput
from app.agent.tools.registry import run_tool
from app.agent.tools.tool import ToolKind


class RecordingSearcher:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str], list[str]]] = []

    async def search(self, query: str, allowed_domains: list[str], blocked_domains: list[str]) -> ToolResult:
        self.calls.append((query, allowed_domains, blocked_domains))
        return ToolResult(content=f"found {query}")


def _reason(inp: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as e:
        parse_input(WebSearchInput, inp)
    reason = str(e.value)
    assert "\n" not in reason
    return reason


@pytest.mark.parametrize(
    ("inp", "needle"),
    [
        ({}, "missing required input 'query'"),
        ({"query": ""}, "must not be empty"),
        ({"query": "   "}, "not only spaces"),
        ({"query": "q" * 501}, "501 characters long; at most 500"),
        ({"query": 3}, "must be a string"),
        ({"query": "q", "allowed_domains": "python.org"}, "must be an array of host names"),
        (
            {"query": "q", "allowed_domains": [f"h{n}.example" for n in range(21)]},
            "lists 21 hosts; at most 20",
        ),
        ({"query": "q", "allowed_domains": ["https://docs.python.org"]}, "is not a plain host name"),
        ({"query": "q", "blocked_domains": ["docs.python.org/3/"]}, "is not a plain host name"),
        ({"query": "q", "blocked_domains": ["docs.python.org:443"]}, "is not a plain host name"),
        ({"query": "q", "blocked_domains": ["user@docs.python.org"]}, "is not a plain host name"),
        ({"query": "q", "blocked_domains": ["*.python.org"]}, "is not a plain host name"),
        ({"query": "q", "blocked_domains": ["localhost"]}, "is not a valid host name"),
        ({"query": "q", "blocked_domains": ["two words.org"]}, "is not a valid host name"),
        ({"query": "q", "blocked_domains": [7]}, "must list host names as strings"),
        (
            {"query": "q", "allowed_domains": ["a.org"], "blocked_domains": ["b.org"]},
            "allowed_domains or blocked_domains, not both",
        ),
    ],
)
def test_a_wrong_input_is_one_line_naming_what_is_wrong(inp: dict[str, Any], needle: str) -> None:
    assert needle in _reason(inp)


def test_hosts_are_kept_as_the_api_takes_them() -> None:
    args = parse_input(
        WebSearchInput,
        {"query": "  q  ", "allowed_domains": ["Docs.Python.org.", "bücher.example", "docs.python.org"]},
    )
    assert args.query == "q"
    assert args.allowed_domains == ["docs.python.org", "xn--bcher-kva.example"]
    # Models send null for what they leave out; an empty list is no list.
    assert parse_input(WebSearchInput, {"query": "q", "blocked_domains": None}).blocked_domains is None
    assert parse_input(WebSearchInput, {"query": "q", "allowed_domains": [], "blocked_domains": ["a.org"]})


def test_it_asks_like_web_fetch_and_a_sub_agent_never_gets_it() -> None:
    tool = BUILTIN_TOOLS.get("web_search")
    assert isinstance(tool, WebSearch)
    assert tool.kind == ToolKind.NETWORK and tool.asks and not tool.read_only
    assert tool.rule_kind is None  # whole-tool rules only: `web_search`
    assert "web_search" not in BUILTIN_TOOLS.read_only().names()


def test_the_window_shows_the_query_and_the_domains(tmp_path: Path) -> None:
    tool = WebSearch()
    args = parse_input(
        WebSearchInput, {"query": "textual\x1b[31m markdown", "allowed_domains": ["a.org", "b.org"]}
    )
    shown = tool.preview(args, ToolContext(workspace=tmp_path))
    assert shown.summary == "search the web"
    assert shown.body == "textual markdown\nonly on: a.org, b.org"
    blocked = parse_input(WebSearchInput, {"query": "q", "blocked_domains": ["spam.example"]})
    assert tool.preview(blocked, ToolContext(workspace=tmp_path)).body == "q\nnot on: spam.example"


async def test_the_call_goes_to_the_runs_web_searcher(tmp_path: Path) -> None:
    searcher = RecordingSearcher()
    ctx = ToolContext(workspace=tmp_path, web_searcher=searcher)
    result = await run_tool("web_search", {"query": "asyncio", "blocked_domains": ["Spam.example"]}, ctx)
    assert result.content == "found asyncio" and not result.is_error
    assert searcher.calls == [("asyncio", [], ["spam.example"])]


async def test_without_a_web_searcher_it_is_one_line(tmp_path: Path) -> None:
    result = await run_tool("web_search", {"query": "asyncio"}, ToolContext(workspace=tmp_path))
    assert result.is_error and result.content == NOT_AVAILABLE


def test_the_web_model_is_the_memory_model_unless_set(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings({"memory_model": "claude-m"}).search_model == "claude-m"
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('web_model = "claude-from-file"\n')
    assert load_settings().search_model == "claude-from-file"
    monkeypatch.setenv("PSEUDOCLAUDE_WEB_MODEL", "claude-from-env")
    assert load_settings().search_model == "claude-from-env"
    assert load_settings({"web_model": "claude-flag"}).search_model == "claude-flag"

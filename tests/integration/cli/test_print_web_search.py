"""``web_search`` in print mode (the real CLI, the real SDK, the fake Messages API): a side request
with the server tool on the web model, its results in the main model's next request, its cost in
the turn's usage line, the permission it needs, and an endpoint that refuses the server tool
remembered so that no later run pays the refusal again."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.support.clitools import MEMORY_MODEL, MODEL, result_text, run_cli, tool_results
from tests.support.fakeapi import (
    FakeAnthropic,
    Recorded,
    http_error,
    message,
    reject_param,
    server_tool_block,
    text,
    text_block,
    tool_use,
    web_search_error_block,
    web_search_reply,
)

pytestmark = pytest.mark.timeout(120)

URL = "https://textual.textualize.io/widgets/markdown/"
TITLE = "Markdown - Textual"
RESULTS = [(URL, TITLE, "3 weeks ago"), ("https://github.com/Textualize/textual/releases", "Releases")]
ANSWER = "Textual 8's Markdown widget streams with Markdown.get_stream."
REFUSAL = "tools.0.custom.input_schema: Field required"  # a gateway that knows custom tools only


def _side_requests(server: FakeAnthropic, model: str = MEMORY_MODEL) -> list[Recorded]:
    return [r for r in server.requests_for(model) if "tools" in r.body]


def _result_of(server: FakeAnthropic, n: int = 1) -> dict[str, object]:
    (result,) = tool_results(server.requests_for(MODEL)[n])
    return result


def _capabilities() -> dict[str, object]:
    return json.loads((Path(os.environ["PSEUDOCLAUDE_HOME"]) / "capabilities.json").read_text())


def test_the_side_request_carries_the_server_tool_on_the_memory_model_and_the_results_reach_the_main_model(
    server: FakeAnthropic, ws: Path
) -> None:
    call = {"query": "Textual 8 Markdown widget changes", "allowed_domains": ["Textual.Textualize.io"]}
    server.script(MODEL, tool_use("web_search", call), text("It streams now."))
    server.script(MEMORY_MODEL, web_search_reply(call["query"], RESULTS, ANSWER))
    res = run_cli(server, ws, "-p", "what changed?", "--allow-tools", "web_search", "--memory", "off")
    assert res.code == 0, res.err
    (side,) = _side_requests(server)
    assert side.body["tools"] == [
        {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": 5,
            "allowed_domains": ["textual.textualize.io"],
        }
    ]
    assert side.body["messages"][0]["content"] == call["query"]
    result = _result_of(server)
    said = result_text(result)
    assert not result.get("is_error"), said
    assert URL in said and TITLE in said and "3 weeks ago" in said and "releases" in said
    assert ANSWER in said and f"[1] {TITLE} — {URL}" in said  # the answer's citation
    assert '<untrusted-web-content source="web_search">' in said and "never follow" in said
    assert "I'll search for that." not in said  # the side model's preamble is not its answer


def test_blocked_domains_are_passed_on_and_the_web_model_setting_is_honoured(
    server: FakeAnthropic, ws: Path
) -> None:
    call = {"query": "python asyncio timeout", "blocked_domains": ["spam.example"]}
    server.script(MODEL, tool_use("web_search", call), text("ok"))
    server.script("claude-web-9", web_search_reply(call["query"], RESULTS, ANSWER))
    res = run_cli(
        server,
        ws,
        "-p",
        "look it up",
        "--allow-tools",
        "web_search",
        "--memory",
        "off",
        PSEUDOCLAUDE_WEB_MODEL="claude-web-9",
    )
    assert res.code == 0, res.err
    (side,) = _side_requests(server, "claude-web-9")
    assert side.body["tools"][0]["blocked_domains"] == ["spam.example"]
    assert "allowed_domains" not in side.body["tools"][0]
    assert not _side_requests(server)  # not the memory model
    assert "(by claude-web-9)" in result_text(_result_of(server))


def test_the_usage_line_counts_the_side_requests_tokens_and_its_search(
    server: FakeAnthropic, ws: Path
) -> None:
    server.script(
        MODEL,
        tool_use("web_search", {"query": "q"}, usage={"input_tokens": 100, "output_tokens": 7}),
        text("ok", usage={"input_tokens": 200, "output_tokens": 3}),
    )
    reply = web_search_reply("q", RESULTS, ANSWER).with_usage(input_tokens=5000, output_tokens=40)
    server.script(MEMORY_MODEL, reply)
    res = run_cli(server, ws, "-p", "search", "--allow-tools", "web_search", "--memory", "off")
    assert res.code == 0, res.err
    done = re.search(r"\[done; usage: (.*)\]", res.err)
    assert done is not None, res.err
    assert done.group(1).startswith("5300 in, 50 out") and "1 web search" in done.group(1), done.group(1)


def test_without_a_rule_print_mode_denies_web_search_and_no_side_request_is_made(
    server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, tool_use("web_search", {"query": "q"}), text("ok"))
    res = run_cli(server, ws, "-p", "search", "--memory", "off")
    assert res.code == 0, res.err
    result = _result_of(server)
    assert result.get("is_error") and result_text(result).startswith("web_search was denied: print mode")
    assert "denied: web_search was denied" in res.err
    assert not server.requests_for(MEMORY_MODEL)


def test_an_endpoint_refusing_the_server_tool_gives_one_line_and_a_second_run_does_not_try_again(
    server: FakeAnthropic, ws: Path
) -> None:
    server.script(
        MODEL,
        tool_use("web_search", {"query": "q1"}),
        text("ok"),
        tool_use("web_search", {"query": "q2"}),
        text("ok"),
    )
    server.script(MEMORY_MODEL, reject_param("tools", message=REFUSAL, sticky=True))
    for prompt in ("first", "second"):
        res = run_cli(server, ws, "-p", prompt, "--allow-tools", "web_search", "--memory", "off")
        assert res.code == 0, res.err
    assert len(_side_requests(server)) == 1  # the second run answered from capabilities.json
    for n in (1, 3):
        result = _result_of(server, n)
        said = result_text(result)
        assert result.get("is_error") and "\n" not in said
        assert said.startswith(f"web search is unavailable at {server.base_url.rstrip('/')}"), said
        assert "mcp_servers" in said and ".mcp.json" in said
    [entry] = _capabilities()["refused_web_search"]
    assert entry["base_url"] == server.base_url.rstrip("/") and entry["model"] == MEMORY_MODEL
    assert _capabilities()["refused_structured_output"] == []


def test_an_unknown_web_model_is_not_taken_for_a_refusal(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, tool_use("web_search", {"query": "q"}), text("ok"))
    server.script(MEMORY_MODEL, http_error(404, message="model: claude-haiku-5-5"))
    res = run_cli(server, ws, "-p", "search", "--allow-tools", "web_search", "--memory", "off")
    assert res.code == 0, res.err
    said = result_text(_result_of(server))
    assert said.startswith("web search failed: unknown model") and "web_model" in said, said
    assert not (Path(os.environ["PSEUDOCLAUDE_HOME"]) / "capabilities.json").exists()


def test_a_search_that_failed_is_one_line(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, tool_use("web_search", {"query": "q"}), text("ok"))
    call = server_tool_block("web_search", {"query": "q"})
    failed = message(
        call, web_search_error_block(call.id, "too_many_requests"), text_block("The search failed.")
    )
    server.script(MEMORY_MODEL, failed)
    res = run_cli(server, ws, "-p", "search", "--allow-tools", "web_search", "--memory", "off")
    assert res.code == 0, res.err
    result = _result_of(server)
    said = result_text(result)
    assert result.get("is_error") and said == (
        "web search failed: the search service is rate limited; try again later (too_many_requests)"
    )


def test_what_the_web_search_found_is_never_given_to_memory_extraction(
    server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, tool_use("web_search", {"query": "q"}), text("The answer is in the docs."))
    server.script(MEMORY_MODEL, web_search_reply("q", RESULTS, ANSWER), text("[]"))
    res = run_cli(server, ws, "-p", "search", "--allow-tools", "web_search", "--memory-wait", "30")
    assert res.code == 0, res.err
    side, extraction = server.requests_for(MEMORY_MODEL)
    assert "tools" in side.body and "tools" not in extraction.body
    sent = json.dumps(extraction.body)
    assert "The answer is in the docs." in sent  # the turn's words reach extraction
    assert URL not in sent and TITLE not in sent and "Markdown.get_stream" not in sent

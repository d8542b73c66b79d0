"""Print mode and the web's rules, through the real CLI against the fake Messages API: with nobody
to ask, web_fetch and web_search are refused without a rule, and the refusal names the rule that
would allow the call (the exact host for web_fetch); a malformed domain rule is a usage error in
--allow-tools and one line from a settings file while the other rules still apply; a deny rule
wins over --allow-tools' bare web_fetch. No call here reaches a web host or a DNS server: each is
refused before any lookup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.clitools import MODEL, result_text, run_cli, tool_results
from tests.support.fakeapi import FakeAnthropic, text, tool_use

pytestmark = pytest.mark.timeout(120)


def _results(server: FakeAnthropic) -> list[str]:
    return [result_text(r) for r in tool_results(server.requests_for(MODEL)[-1])]


def _config(home: Path, body: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(body)


def test_without_a_rule_both_web_tools_are_refused_naming_the_rule_to_add(
    server: FakeAnthropic, ws: Path
) -> None:
    server.script(
        MODEL,
        tool_use("web_fetch", {"url": "https://Docs.Example.org/guide?x=1"}, id="toolu_f"),
        tool_use("web_search", {"query": "textual markdown widget"}, id="toolu_s"),
        text("could not"),
    )
    res = run_cli(server, ws, "-p", "look it up", PSEUDOCLAUDE_MEMORY_MODE="off")
    assert res.code == 0, res.err
    fetched, searched = _results(server)
    assert fetched == (
        "web_fetch was denied: print mode runs it only when a rule or --allow-tools allows it "
        "(no rule matches this web_fetch call); the rule web_fetch(domain:docs.example.org) would allow it"
    )
    assert searched.startswith("web_search was denied: print mode runs it only when a rule")
    assert searched.endswith("; the rule web_search would allow it")
    assert "web_fetch(domain:docs.example.org) would allow it" in res.err  # the person sees it too
    # The side request of web_search was never made.
    assert not any("web_search_20250305" in json.dumps(r.body) for r in server.requests)


def test_a_malformed_domain_rule_in_allow_tools_is_a_usage_error(server: FakeAnthropic, ws: Path) -> None:
    res = run_cli(server, ws, "-p", "hi", "--allow-tools", "web_fetch(domain:*python.org),web_search")
    assert res.code == 2
    [line] = [x for x in res.err.splitlines() if "--allow-tools" in x]
    assert "web_fetch(domain:*python.org)" in line and "a * may only start the host" in line
    assert server.requests_for(MODEL) == []


def test_a_bad_rule_in_a_file_is_one_line_and_a_deny_wins_over_allow_tools(
    server: FakeAnthropic, ws: Path, isolated_home: Path
) -> None:
    _config(
        isolated_home,
        '[permissions]\ndeny = ["web_fetch(domain:evil.example)", "web_fetch(domain:docs.python.org/3)"]\n',
    )
    server.script(
        MODEL, tool_use("web_fetch", {"url": "https://EVIL.example./x"}, id="toolu_e"), text("refused")
    )
    res = run_cli(server, ws, "-p", "fetch it", "--allow-tools", "web_fetch", PSEUDOCLAUDE_MEMORY_MODE="off")
    assert res.code == 0, res.err
    [denied] = _results(server)
    assert denied.startswith("web_fetch was denied by the rule web_fetch(domain:evil.example) in ")
    [problem] = [x for x in res.err.splitlines() if "docs.python.org/3" in x]
    assert "a domain rule names a host, not a path" in problem

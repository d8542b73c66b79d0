"""Permission rules for the web: ``web_fetch`` (every public host), ``web_fetch(domain:HOST)``
(exactly that host), ``web_fetch(domain:*.SUFFIX)`` (any name under it, not the suffix itself),
hosts compared lower case, IDNA-encoded and without a trailing dot; a malformed pattern refused
in one line wherever it is written; deny wins; ``names_host`` is an exact allow rule only; what
"always allow" proposes; the gate with and without a window."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent.permissions.domains import host_key
from app.agent.permissions.edits import add_rule
from app.agent.permissions.gate import Gate, PermissionDecision
from app.agent.permissions.loading import load_permission_rules
from app.agent.permissions.question import Answer, Question
from app.agent.permissions.rules import (
    PermissionRules,
    RuleError,
    parse_rule,
    parse_rule_list,
    rule_touches,
)
from app.agent.permissions.suggestions import suggest
from app.agent.tools import BUILTIN_TOOLS, ToolContext, ToolRegistry
from app.agent.tools.tool import RuleTarget


def web_tools() -> ToolRegistry:
    """The built-ins, ``web_fetch`` (rules naming hosts) and ``web_search`` (whole-tool rules) among
    them."""
    tools = BUILTIN_TOOLS.copy()
    fetch, search = tools.get("web_fetch"), tools.get("web_search")
    assert fetch is not None and fetch.rule_kind == "domain" and fetch.asks
    assert search is not None and search.rule_kind is None and search.asks
    return tools


TOOLS = web_tools()


def _load(ws: Path, home: Path, *, user: str = "", project: str = "", local: str = "") -> PermissionRules:
    for path, body in (
        (home / "config.toml", user),
        (ws / ".PseudoClaude" / "settings.toml", project),
        (ws / ".PseudoClaude" / "settings.local.toml", local),
    ):
        if body:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
    return load_permission_rules(ws, home, tools=TOOLS)


def _allow(
    ws: Path, home: Path, *rules: str, deny: tuple[str, ...] = (), ask: tuple[str, ...] = ()
) -> PermissionRules:
    def quoted(items: tuple[str, ...]) -> str:
        return ", ".join(f'"{r}"' for r in items)

    return _load(
        ws,
        home,
        user=f"[permissions]\nallow = [{quoted(rules)}]\ndeny = [{quoted(deny)}]\nask = [{quoted(ask)}]\n",
    )


def _fetch(rules: PermissionRules, host: str) -> str:
    return rules.decide("web_fetch", RuleTarget.domain(host), default="ask").decision


# -- parsing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("web_fetch(domain:docs.python.org)", "domain:docs.python.org"),
        ("web_fetch(domain:*.python.org)", "domain:*.python.org"),
        ("web_fetch(domain:127.0.0.1)", "domain:127.0.0.1"),
        ("web_fetch(domain:[::1])", "domain:[::1]"),
        ("web_fetch(domain:::1)", "domain:::1"),
        ("web_fetch( domain:Docs.Python.org. )", "domain:Docs.Python.org."),
        ("web_fetch(domain:bücher.example)", "domain:bücher.example"),
    ],
)
def test_every_web_rule_form_parses(text: str, pattern: str | None) -> None:
    rule = parse_rule(text, TOOLS)
    assert rule.tool == text.split("(")[0] and rule.pattern == pattern


def test_claude_codes_names_are_read_as_ours() -> None:
    rule = parse_rule("WebFetch(domain:docs.python.org)", TOOLS)
    assert (rule.tool, rule.pattern) == ("web_fetch", "domain:docs.python.org")
    assert parse_rule("WebSearch", TOOLS).tool == "web_search"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("web_fetch(docs.python.org)", "a web_fetch pattern is domain:HOST"),
        ("web_fetch(domain:)", "no host named: write web_fetch alone"),
        ("web_fetch(domain:*)", "no host named: write web_fetch alone"),
        ("web_fetch(domain:*.)", "no host named"),
        ("web_fetch(domain:docs.*.org)", "a * may only start the host"),
        ("web_fetch(domain:*python.org)", "a * may only start the host"),
        ("web_fetch(domain:python.*)", "a * may only start the host"),
        ("web_fetch(domain:*.*.python.org)", "a * may only start the host"),
        ("web_fetch(domain:docs.python.org:443)", "without a port"),
        ("web_fetch(domain:[::1]:8080)", "without a port"),
        ("web_fetch(domain:docs.python.org/3/)", "not a path"),
        ("web_fetch(domain:https://docs.python.org)", "without a scheme"),
        ("web_fetch(https://docs.python.org)", "without a scheme"),
        ("web_fetch(domain:docs python.org)", "no spaces"),
        ("web_fetch(domain: docs.python.org)", "no spaces"),
        ("web_fetch(domain:user@docs.python.org)", "user name"),
        ("web_fetch(domain:a..b.org)", "not a host name"),
        ("web_fetch(domain:-x.org)", "not a host name"),
        ("web_fetch(domain:[docs.python.org])", "brackets hold an IPv6 address"),
        ("web_fetch(domain:*.0.0.1)", "never an address"),
        ("web_fetch(domain:fe80::1%eth0)", "zone"),
        (
            "web_search(domain:docs.python.org)",
            "takes no pattern (only bash, the file tools and web_fetch do)",
        ),
    ],
)
def test_a_malformed_web_rule_is_refused_in_one_line(text: str, why: str) -> None:
    with pytest.raises(RuleError) as err:
        parse_rule(text, TOOLS)
    assert why in str(err.value) and "\n" not in str(err.value)


BAD = "web_fetch(domain:*python.org)"


def test_a_bad_pattern_is_refused_in_every_list_of_every_file_and_the_rest_still_load(
    ws: Path, isolated_home: Path
) -> None:
    body = (
        f'[permissions]\nallow = ["{BAD}", "web_fetch(domain:docs.python.org)"]\n'
        f'ask = ["{BAD}"]\ndeny = ["{BAD}", "web_fetch(domain:evil.com)"]\n'
    )
    rules = _load(ws, isolated_home, user=body, project=body, local=body)
    problems = [p for p in rules.problems if BAD in p]
    assert len(problems) == 9 and all("a * may only start the host" in p for p in problems)
    for where in ("config.toml", ".PseudoClaude/settings.toml", ".PseudoClaude/settings.local.toml"):
        for key in ("allow", "ask", "deny"):
            assert any(where in p and f"permissions.{key}" in p for p in problems), (where, key)
    active = {(r.source.rsplit("/", 1)[-1], r.list, r.rule.text) for r in rules.rules}
    assert ("config.toml", "allow", "web_fetch(domain:docs.python.org)") in active
    assert ("settings.local.toml", "deny", "web_fetch(domain:evil.com)") in active
    assert ("settings.toml", "deny", "web_fetch(domain:evil.com)") in active  # a deny applies at once
    assert [r.rule.text for r in rules.waiting] == ["web_fetch(domain:docs.python.org)"]  # waits for trust


def test_allow_tools_takes_domain_rules_and_names_each_bad_one() -> None:
    parsed = parse_rule_list(
        "web_fetch(domain:docs.python.org), web_fetch(domain:*.rs), web_search", tools=TOOLS
    )
    assert [r.text for r in parsed] == [
        "web_fetch(domain:docs.python.org)",
        "web_fetch(domain:*.rs)",
        "web_search",
    ]
    with pytest.raises(ValueError) as err:
        parse_rule_list(f"web_fetch(domain:ok.org), {BAD}, web_fetch(domain:x.org:80)", tools=TOOLS)
    message = str(err.value)
    assert message.startswith("--allow-tools: ") and "\n" not in message
    assert BAD in message and "web_fetch(domain:x.org:80)" in message and "ok.org" not in message


# -- matching ---------------------------------------------------------------------------------


def test_an_exact_rule_covers_that_host_only(ws: Path, isolated_home: Path) -> None:
    rules = _allow(ws, isolated_home, "web_fetch(domain:docs.python.org)")
    assert _fetch(rules, "docs.python.org") == "allow"
    for other in ("python.org", "www.docs.python.org", "docs.python.org.evil.com", "evildocs.python.org"):
        assert _fetch(rules, other) == "ask", other


def test_a_wildcard_covers_every_depth_below_but_not_the_apex(ws: Path, isolated_home: Path) -> None:
    rules = _allow(ws, isolated_home, "web_fetch(domain:*.python.org)")
    for covered in ("docs.python.org", "a.b.c.python.org", "PEPS.Python.org."):
        assert _fetch(rules, covered) == "allow", covered
    for not_covered in ("python.org", "notpython.org", "python.org.evil.com", "python.org."):
        assert _fetch(rules, not_covered) == "ask", not_covered


def test_case_and_a_trailing_dot_do_not_matter_on_either_side(ws: Path, isolated_home: Path) -> None:
    rules = _allow(ws, isolated_home, "web_fetch(domain:Docs.Python.org.)")
    for host in ("docs.python.org", "DOCS.PYTHON.ORG", "Docs.Python.org."):
        assert _fetch(rules, host) == "allow", host


def test_an_international_name_matches_its_idna_form_both_ways(ws: Path, isolated_home: Path) -> None:
    unicode_rule = _allow(ws, isolated_home, "web_fetch(domain:bücher.example)")
    assert _fetch(unicode_rule, "xn--bcher-kva.example") == "allow"
    assert _fetch(unicode_rule, "BÜCHER.example") == "allow"
    assert _fetch(unicode_rule, "bucher.example") == "ask"  # a look-alike is another host
    idna_rule = _allow(ws, isolated_home, "web_fetch(domain:xn--bcher-kva.example)")
    assert _fetch(idna_rule, "bücher.example") == "allow"
    wildcard = _allow(ws, isolated_home, "web_fetch(domain:*.bücher.example)")
    assert _fetch(wildcard, "www.xn--bcher-kva.example") == "allow"


def test_addresses_match_exactly_and_ipv6_in_any_spelling(ws: Path, isolated_home: Path) -> None:
    rules = _allow(ws, isolated_home, "web_fetch(domain:127.0.0.1)", "web_fetch(domain:[::1])")
    assert _fetch(rules, "127.0.0.1") == "allow"
    assert _fetch(rules, "127.0.0.2") == "ask"
    for spelling in ("::1", "[::1]", "0:0:0:0:0:0:0:1", "0::1"):
        assert _fetch(rules, spelling) == "allow", spelling
    bare = _allow(ws, isolated_home, "web_fetch(domain:::1)")
    assert _fetch(bare, "::1") == "allow"


def test_a_wildcard_never_covers_an_address(ws: Path, isolated_home: Path) -> None:
    rules = _allow(ws, isolated_home, "web_fetch(domain:*.1)")  # an all-digit last label: refused
    assert rules.rules == () and any("never an address" in p for p in rules.problems)
    assert _fetch(_allow(ws, isolated_home, "web_fetch(domain:*.com)"), "1.2.3.com") == "allow"


def test_a_host_that_is_no_host_matches_only_a_rule_for_every_call(ws: Path, isolated_home: Path) -> None:
    assert host_key("") is None and host_key("a b") is None
    exact = _allow(ws, isolated_home, "web_fetch(domain:docs.python.org)")
    assert _fetch(exact, "docs.python.org") == "allow"
    assert _fetch(exact, "") == "ask" and _fetch(exact, "docs python.org") == "ask"
    assert _fetch(_allow(ws, isolated_home, "web_fetch"), "") == "allow"


def test_deny_wins_over_ask_over_allow(ws: Path, isolated_home: Path) -> None:
    rules = _allow(
        ws,
        isolated_home,
        "web_fetch",
        deny=("web_fetch(domain:evil.com)", "web_fetch(domain:*.evil.com)"),
        ask=("web_fetch(domain:*.python.org)",),
    )
    decided = rules.decide("web_fetch", RuleTarget.domain("EVIL.com."))
    assert decided.decision == "deny" and "web_fetch(domain:evil.com)" in decided.reason
    assert _fetch(rules, "cdn.evil.com") == "deny"
    assert _fetch(rules, "docs.python.org") == "ask"
    assert _fetch(rules, "example.org") == "allow"
    whole = _allow(ws, isolated_home, "web_fetch(domain:docs.python.org)", deny=("web_fetch",))
    assert _fetch(whole, "docs.python.org") == "deny"


def test_a_hook_matcher_touches_the_hosts_a_domain_rule_names(ws: Path) -> None:
    rule = parse_rule("web_fetch(domain:*.python.org)", TOOLS)
    assert rule_touches(rule, "web_fetch", {"url": "https://docs.python.org/3/"}, ws, TOOLS)
    assert not rule_touches(rule, "web_fetch", {"url": "https://python.org/"}, ws, TOOLS)
    assert rule_touches(parse_rule("web_fetch", TOOLS), "web_fetch", {"url": "https://a.org/"}, ws, TOOLS)


# -- names_host: what a loopback or private host needs ----------------------------------------


def test_names_host_is_an_exact_allow_rule_only(ws: Path, isolated_home: Path) -> None:
    assert not _allow(ws, isolated_home, "web_fetch").names_host("web_fetch", "127.0.0.1")
    wildcard = _allow(ws, isolated_home, "web_fetch(domain:*.internal.example)")
    assert _fetch(wildcard, "db.internal.example") == "allow"
    assert not wildcard.names_host("web_fetch", "db.internal.example")
    exact = _allow(ws, isolated_home, "web_fetch(domain:127.0.0.1)", "web_fetch(domain:[::1])")
    assert exact.names_host("web_fetch", "127.0.0.1")
    assert exact.names_host("web_fetch", "::1") and exact.names_host("web_fetch", "[0::1]")
    assert not exact.names_host("web_fetch", "127.0.0.2")
    assert not exact.names_host("web_search", "127.0.0.1")  # another tool's rule
    upper = _allow(ws, isolated_home, "web_fetch(domain:Router.Local.)")
    assert upper.names_host("web_fetch", "router.local")


def test_names_host_needs_an_allow_in_force_and_no_deny(ws: Path, isolated_home: Path) -> None:
    denied = _allow(ws, isolated_home, "web_fetch(domain:127.0.0.1)", deny=("web_fetch",))
    assert not denied.names_host("web_fetch", "127.0.0.1")
    asked = _allow(ws, isolated_home, ask=("web_fetch(domain:127.0.0.1)",))
    assert not asked.names_host("web_fetch", "127.0.0.1")
    (isolated_home / "config.toml").unlink()
    project = _load(ws, isolated_home, project='[permissions]\nallow = ["web_fetch(domain:127.0.0.1)"]\n')
    assert project.waiting and not project.names_host("web_fetch", "127.0.0.1")  # waits for trust
    flag = PermissionRules(workspace=ws).with_rules(
        parse_rule_list("web_fetch(domain:127.0.0.1)", tools=TOOLS), scope="flag", source="--allow-tools"
    )
    assert flag.names_host("web_fetch", "127.0.0.1")


# -- always allow -----------------------------------------------------------------------------


def test_always_allow_proposes_the_exact_host_never_the_bare_tool(ws: Path) -> None:
    fetch = TOOLS.get("web_fetch")
    assert fetch is not None

    def proposed(url: str) -> tuple[str, ...]:
        return suggest("web_fetch", fetch.rule_target(fetch.parse({"url": url})), ws).rules

    assert proposed("https://Docs.Python.org/3/library/") == ("web_fetch(domain:docs.python.org)",)
    assert proposed("http://127.0.0.1:8080/x") == ("web_fetch(domain:127.0.0.1)",)
    assert proposed("http://[::1]:8080/") == ("web_fetch(domain:[::1])",)
    assert proposed("https://bücher.example/") == ("web_fetch(domain:xn--bcher-kva.example)",)
    for rule in ("web_fetch(domain:docs.python.org)", "web_fetch(domain:[::1])"):
        assert parse_rule(rule, TOOLS).text == rule  # what it proposes can be saved
    assert suggest("web_fetch", RuleTarget.domain(""), ws).rules == ()
    assert suggest("web_search", None, ws).rules == ("web_search",)


def test_always_allow_writes_the_domain_rule_into_the_settings_file(ws: Path, isolated_home: Path) -> None:
    path = ws / ".PseudoClaude" / "settings.local.toml"
    [rule] = suggest("web_fetch", RuleTarget.domain("docs.python.org"), ws).rules
    assert add_rule(path, rule, tools=TOOLS)
    assert 'allow = ["web_fetch(domain:docs.python.org)"]' in path.read_text()
    rules = load_permission_rules(ws, isolated_home, tools=TOOLS)
    assert _fetch(rules, "docs.python.org") == "allow" and _fetch(rules, "python.org") == "ask"


# -- the gate ---------------------------------------------------------------------------------


class Person:
    def __init__(self) -> None:
        self.asked: list[Question] = []

    async def __call__(self, question: Question) -> Answer:
        self.asked.append(question)
        return Answer(choice="once")


async def _decide(gate: Gate, ws: Path, url: str) -> PermissionDecision:
    fetch = TOOLS.get("web_fetch")
    assert fetch is not None
    return await gate.decide(fetch, fetch.parse({"url": url}), ctx=ToolContext(workspace=ws), call_id="c")


async def test_a_host_a_rule_names_runs_without_asking_and_another_asks(
    ws: Path, isolated_home: Path
) -> None:
    person = Person()
    gate = Gate(_allow(ws, isolated_home, "web_fetch(domain:docs.python.org)"), ask=person)
    assert await _decide(gate, ws, "https://docs.python.org/3/") == PermissionDecision(True)
    assert person.asked == []
    assert (await _decide(gate, ws, "https://pypi.org/project/x/")).allowed
    [question] = person.asked
    assert question.tool == "web_fetch" and question.rules == ("web_fetch(domain:pypi.org)",)
    assert "https://pypi.org/project/x/" in question.preview.summary + question.preview.body


async def test_print_mode_denies_naming_the_rule_to_add(ws: Path, isolated_home: Path) -> None:
    gate = Gate(_allow(ws, isolated_home, "web_fetch(domain:docs.python.org)"))  # nobody to ask
    assert (await _decide(gate, ws, "https://docs.python.org/3/")).allowed
    denied = await _decide(gate, ws, "https://Pypi.org/simple/")
    assert not denied.allowed
    assert denied.reason == (
        "web_fetch was denied: print mode runs it only when a rule or --allow-tools allows it "
        "(no rule matches this web_fetch call); the rule web_fetch(domain:pypi.org) would allow it"
    )


async def test_web_search_takes_whole_tool_rules_and_print_mode_names_it(
    ws: Path, isolated_home: Path
) -> None:
    search = TOOLS.get("web_search")
    assert search is not None
    args = search.parse({"query": "textual markdown"})
    ctx = ToolContext(workspace=ws)
    denied = await Gate(_load(ws, isolated_home)).decide(search, args, ctx=ctx)
    assert not denied.allowed and denied.reason.endswith("; the rule web_search would allow it")
    allowed = Gate(_allow(ws, isolated_home, "web_search"))
    assert await allowed.decide(search, args, ctx=ctx) == PermissionDecision(True)
    assert not allowed.rules.names_host("web_search", "127.0.0.1")


async def test_print_mode_names_no_rule_when_an_ask_rule_decided(ws: Path, isolated_home: Path) -> None:
    gate = Gate(_allow(ws, isolated_home, "web_fetch", ask=("web_fetch(domain:pypi.org)",)))
    denied = await _decide(gate, ws, "https://pypi.org/")
    assert not denied.allowed and "asks for this web_fetch call" in denied.reason
    assert "would allow it" not in denied.reason

"""The URLs web_fetch reads: http and https only, a host, no user name or password, at most 2000
characters; the host as a rule names it; refused in one line before anyone is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent.tools import BUILTIN_TOOLS, ToolError
from app.agent.tools.base import ToolContext
from app.agent.tools.web.urls import UrlError, parse_url


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("ftp://example.com/file", "http and https URLs only, not 'ftp'"),
        ("file:///etc/passwd", "http and https URLs only, not 'file'"),
        ("javascript:alert(1)", "http and https URLs only"),
        ("example.com/page", "not a full URL"),
        ("//example.com/page", "not a full URL"),
        ("https://user:secret@example.com/", "user name or password"),
        ("https://token@example.com/", "user name or password"),
        ("http://evil.test\\@example.com/", "user name or password"),
        ("http:///path", "names no host"),
        ("https://:443/", "names no host"),
        ("https://exa mple.com/", "not a valid host name"),
        ("https://a..b/", "not a valid host name"),
        ("https://example.com:99999/", "port"),
        ("https://example.com:0/", "port"),
        ("https://[fe80::1%25eth0]/", "zone"),
        ("https://[nope]/", "not a valid"),
        ("https://example.com/\nHost: evil", "control character"),
        ("https://example.com/" + "a" * 2000, "at most 2,000"),
    ],
)
def test_a_url_web_fetch_does_not_read_is_one_line(raw: str, why: str) -> None:
    with pytest.raises(UrlError) as e:
        parse_url(raw)
    assert why in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize(
    ("raw", "host", "port", "text"),
    [
        (
            "https://Docs.Python.ORG/3/library/?q=1#frag",
            "docs.python.org",
            443,
            "https://docs.python.org/3/library/?q=1",
        ),
        ("http://example.com.", "example.com", 80, "http://example.com/"),
        ("HTTP://example.com:8080", "example.com", 8080, "http://example.com:8080/"),
        ("https://[2001:DB8::1]:8443/x", "2001:db8::1", 8443, "https://[2001:db8::1]:8443/x"),
        ("https://bücher.example/", "xn--bcher-kva.example", 443, "https://xn--bcher-kva.example/"),
        ("  https://example.com/a  ", "example.com", 443, "https://example.com/a"),
    ],
)
def test_the_host_is_kept_as_a_rule_names_it(raw: str, host: str, port: int, text: str) -> None:
    url = parse_url(raw)
    assert (url.host, url.port, url.text) == (host, port, text)


def test_a_redirect_stays_on_the_host_or_leaves_it() -> None:
    base = parse_url("http://example.com/a/b")
    assert base.same_host(base.join("/c"))
    assert base.join("c").text == "http://example.com/a/c"
    assert base.same_host(base.join("https://example.com/secure"))  # http to https, default ports
    assert not base.same_host(base.join("http://example.com:8080/"))  # another port: another service
    assert not base.same_host(base.join("http://www.example.com/"))
    assert not base.same_host(base.join("//other.test/x"))
    secure = parse_url("https://example.com/")
    assert not secure.same_host(secure.join("http://example.com/"))  # never down to http
    with pytest.raises(UrlError, match="user name or password"):
        base.join("http://u:p@example.com/")


def test_the_tool_refuses_a_bad_url_before_anything_and_names_the_host_for_the_rules(tmp_path: Path) -> None:
    tool = BUILTIN_TOOLS.get("web_fetch")
    assert tool is not None and tool.kind == "network" and tool.asks and tool.rule_kind == "domain"
    with pytest.raises(ToolError, match="http and https URLs only"):
        tool.parse({"url": "ftp://example.com/"})
    with pytest.raises(ToolError, match="user name or password"):
        tool.parse({"url": "https://a:b@example.com/"})
    with pytest.raises(ToolError, match="must not be empty"):
        tool.parse({"url": ""})
    args = tool.parse({"url": "https://Docs.Python.org./3/"})
    target = tool.rule_target(args)
    assert (target.kind, target.value) == ("domain", "docs.python.org")
    preview = tool.preview(args, ToolContext(workspace=tmp_path))
    assert preview.summary == "fetch a web page" and preview.body == "https://Docs.Python.org./3/"
    with pytest.raises(ToolError, match="control character"):  # nor can an escape reach the window
        tool.parse({"url": "https://example.com/\x1b[31mred"})


@pytest.mark.parametrize("name", ["straße.de", "Bücher.Example.", "ÖBB.at", "xn--bcher-kva.example"])
def test_the_tool_and_the_rules_spell_an_international_host_alike(name: str) -> None:
    """A rule names the host the tool reaches: both use IDNA 2008 (the standard library's codec,
    IDNA 2003, maps ``straße.de`` to ``strasse.de``, another domain, so no rule would match)."""
    from app.agent.permissions.domains import normalize_host

    assert parse_url(f"https://{name}/x").host == normalize_host(name)

"""web_fetch against a local web site (tests/support/websites.py) in this process: the connection
goes to the checked address with the URL's host in the Host header (and the TLS server name),
redirects, the size and time bounds, and each kind of body. Nothing reaches the internet: every
made-up name resolves through the test's own resolver."""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PIL import Image

from app.agent.tools.base import ToolContext, ToolResult
from app.agent.tools.builtin.web_fetch import WebFetch
from app.agent.tools.registry import call_tool
from app.agent.tools.web.client import Limits
from app.agent.tools.web.result import TAG, UNTRUSTED
from tests.support.websites import Site

pytestmark = pytest.mark.timeout(60)


class Resolver:
    """A made-up DNS: each name to its addresses, counting the lookups."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host not in self.answers:
            raise socket.gaierror(-2, "Name or service not known")
        return self.answers[host]


def ctx_naming(tmp_path: Path, *hosts: str) -> ToolContext:
    """A context whose allow rules name ``hosts`` exactly."""
    return ToolContext(
        workspace=tmp_path, host_named=lambda tool, host: tool == "web_fetch" and host in hosts
    )


async def fetch(url: str, ctx: ToolContext, limits: Limits | None = None) -> ToolResult:
    tool = WebFetch(limits)
    args = tool.parse({"url": url})
    tool.precheck(args, ctx)
    return await call_tool(tool, args, ctx)


def one_line_error(r: ToolResult) -> str:
    assert r.is_error and "\n" not in r.content and r.content.strip(), r.content
    return r.content


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as s:
        yield s


async def test_a_page_reaches_the_model_as_marked_markdown_naming_the_url(site: Site, tmp_path: Path) -> None:
    page = (
        "<html><head><title>Doc</title><script>STEAL()</script><style>p{}</style></head>"
        "<body><nav>MENU</nav><p>Use <b>this</b>.</p></body></html>"
    )
    site.route("/doc", page)
    r = await fetch(site.url("/doc"), ctx_naming(tmp_path, "127.0.0.1"))
    assert not r.is_error
    assert r.content == (
        f"Fetched {site.url('/doc')}: HTTP 200 OK, text/html, {len(page)} B\n{UNTRUSTED}\n"
        f'<{TAG} url="{site.url("/doc")}">\n# Doc\n\nUse **this**.\n</{TAG}>'
    )
    assert r.view is not None and r.view.output == "# Doc\n\nUse **this**."


async def test_the_connection_goes_to_the_checked_address_with_the_host_named_in_the_header(
    site: Site, tmp_path: Path
) -> None:
    site.route("/", "<p>reached</p>")
    dns = Resolver({"web.test": ["127.0.0.1"]})
    r = await fetch(f"http://web.test:{site.port}/", ctx_naming(tmp_path, "web.test"), Limits(lookup=dns))
    assert not r.is_error and "reached" in r.content, r.content
    [seen] = site.seen
    assert seen.headers["host"] == f"web.test:{site.port}"
    assert dns.asked == ["web.test"]  # looked up once: the request went to what was checked


async def test_https_names_the_host_to_tls_while_connecting_to_the_checked_address(tmp_path: Path) -> None:
    """The TLS handshake made to 127.0.0.1 carries the URL's host as its server name (so the
    certificate is checked against the host, not the address)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    hello: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(10)
            hello.append(conn.recv(16384))

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        dns = Resolver({"secure.web.test": ["127.0.0.1"]})
        r = await fetch(
            f"https://secure.web.test:{port}/", ctx_naming(tmp_path, "secure.web.test"), Limits(lookup=dns)
        )
        server.join(10)
    finally:
        listener.close()
    assert "could not read" in one_line_error(r) or "could not connect" in r.content
    assert hello and hello[0][:1] == b"\x16"  # a TLS handshake record
    assert b"secure.web.test" in hello[0]  # its server name


async def test_a_host_resolving_to_one_public_and_one_private_address_is_refused(
    site: Site, tmp_path: Path
) -> None:
    site.route("/", "<p>inside</p>")
    dns = Resolver({"mixed.test": ["127.0.0.1", "93.184.215.14"]})
    r = await fetch(f"http://mixed.test:{site.port}/", ToolContext(workspace=tmp_path), Limits(lookup=dns))
    line = one_line_error(r)
    assert "mixed.test" in line and "127.0.0.1" in line and "loopback" in line
    assert site.seen == []


async def test_a_bare_allow_never_covers_a_loopback_url(site: Site, tmp_path: Path) -> None:
    site.route("/", "<p>inside</p>")
    ctx = ctx_naming(tmp_path, "localhost")  # a rule naming another host is no rule for this one
    tool = WebFetch()
    with pytest.raises(Exception, match="is a loopback address"):
        tool.precheck(tool.parse({"url": site.url("/")}), ctx)
    assert "is a loopback address" in one_line_error(
        await call_tool(tool, tool.parse({"url": site.url("/")}), ctx)
    )
    assert site.seen == []


async def test_a_same_host_redirect_is_followed_and_its_address_checked_again(
    site: Site, tmp_path: Path
) -> None:
    site.route("/old", status=301, headers={"Location": "/new?x=1"})
    site.route("/new", "<p>moved here</p>")
    dns = Resolver({"web.test": ["127.0.0.1"]})
    url = f"http://web.test:{site.port}/old"
    r = await fetch(url, ctx_naming(tmp_path, "web.test"), Limits(lookup=dns))
    assert f"Fetched http://web.test:{site.port}/new?x=1 (redirected from {url}): HTTP 200" in r.content
    assert "moved here" in r.content and site.paths() == ["/old", "/new?x=1"]
    assert dns.asked == ["web.test", "web.test"]


async def test_a_redirect_to_another_host_is_named_not_followed(site: Site, tmp_path: Path) -> None:
    site.route("/go", status=302, headers={"Location": site.url("/target", host="localhost")})
    site.route("/target", "<p>should not be read</p>")
    r = await fetch(site.url("/go"), ctx_naming(tmp_path, "127.0.0.1", "localhost"))
    assert r.content == (
        f"{site.url('/go')} redirects (HTTP 302) to another host: {site.url('/target', host='localhost')}. "
        "It was not followed; to read it, call web_fetch with that URL (it is asked for on its own)."
    )
    assert site.paths() == ["/go"]


async def test_five_redirects_are_followed_and_a_sixth_is_one_line(site: Site, tmp_path: Path) -> None:
    for n in range(6):
        site.route(f"/hop{n}", status=307, headers={"Location": f"/hop{n + 1}"})
    site.route("/hop6", "<p>arrived</p>")
    ctx = ctx_naming(tmp_path, "127.0.0.1")
    assert "arrived" in (await fetch(site.url("/hop1"), ctx)).content
    assert site.paths() == [f"/hop{n}" for n in range(1, 7)]
    line = one_line_error(await fetch(site.url("/hop0"), ctx))
    assert line == (
        f"web_fetch: {site.url('/hop0')} redirected more than 5 times; the last redirect, to "
        f"{site.url('/hop6')}, was not followed"
    )
    assert site.paths()[6:] == [f"/hop{n}" for n in range(6)]


async def test_a_body_longer_than_10_mb_is_read_to_the_cap_and_said_cut(site: Site, tmp_path: Path) -> None:
    site.route("/endless", b"a" * 65536, content_type="text/plain", stream=True)
    r = await fetch(site.url("/endless"), ctx_naming(tmp_path, "127.0.0.1"))
    assert not r.is_error
    assert ", text/plain, 10.0 MiB, cut at 10.0 MiB: only its start was read" in r.content.split("\n")[0]
    assert "more characters of the page were left out" in r.content  # bounded without a session


async def test_a_server_that_does_not_answer_is_given_up_at_the_time_bound(
    site: Site, tmp_path: Path
) -> None:
    hold = threading.Event()
    site.route("/slow", "<p>late</p>", hold=hold)
    started = time.monotonic()
    try:
        r = await fetch(site.url("/slow"), ctx_naming(tmp_path, "127.0.0.1"), Limits(timeout=0.5))
    finally:
        hold.set()
    assert one_line_error(r) == f"web_fetch: {site.url('/slow')} did not answer in full within 0.5 s"
    assert time.monotonic() - started < 10


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


async def test_an_image_is_given_as_an_image_scaled(site: Site, tmp_path: Path) -> None:
    site.route("/shots/wide.png", _png(3136, 200), content_type="image/png")
    r = await fetch(site.url("/shots/wide.png"), ctx_naming(tmp_path, "127.0.0.1"))
    assert not r.is_error, r.content
    [image] = r.images
    assert (image.width, image.height) == (1568, 100)
    assert "[Image #1: wide.png 1568×100] (wide.png: scaled from 3136×200 to 1568×100)" in r.content
    decoded = Image.open(io.BytesIO(__import__("base64").b64decode(image.source.data)))
    assert decoded.size == (1568, 100)


@pytest.mark.parametrize(
    ("body", "content_type", "said"),
    [
        (b"%PDF-1.7 ...", "application/pdf", "it is application/pdf, which web_fetch does not read"),
        (b"PK\x03\x04...", "application/zip", "it is application/zip, which web_fetch does not read"),
        (b"not a png at all", "image/png", "not a readable image"),
    ],
)
async def test_a_body_of_another_type_is_one_line(
    site: Site, tmp_path: Path, body: bytes, content_type: str, said: str
) -> None:
    site.route("/file", body, content_type=content_type)
    r = await fetch(site.url("/file"), ctx_naming(tmp_path, "127.0.0.1"))
    assert said in one_line_error(r) and r.images == []


async def test_text_in_another_charset_is_decoded(site: Site, tmp_path: Path) -> None:
    site.route("/latin", "Grüße aus Köln".encode("iso-8859-1"), content_type="text/plain; charset=ISO-8859-1")
    site.route("/data.json", b'{"k": "v"}', content_type="application/json")
    ctx = ctx_naming(tmp_path, "127.0.0.1")
    assert "\nGrüße aus Köln\n" in (await fetch(site.url("/latin"), ctx)).content
    assert '\n{"k": "v"}\n' in (await fetch(site.url("/data.json"), ctx)).content


async def test_an_error_status_is_one_line_and_a_short_marked_excerpt(site: Site, tmp_path: Path) -> None:
    site.route("/gone", "<html><body><h1>Gone</h1><script>X</script>" + "<p>w</p>" * 2000, status=410)
    r = await fetch(site.url("/gone"), ctx_naming(tmp_path, "127.0.0.1"))
    assert r.is_error
    first, second, *rest = r.content.split("\n")
    assert second == UNTRUSTED and first.startswith(f"Fetched {site.url('/gone')}: HTTP 410 Gone, text/html")
    assert rest[0].startswith(f"<{TAG}") and rest[1] == "# Gone" and "X" not in "\n".join(rest)
    assert len(r.content) < 2000


async def test_the_call_for_a_name_that_does_not_resolve_is_one_line(tmp_path: Path) -> None:
    dns: Callable[[str, int], list[str]] = Resolver({})
    r = await fetch("http://nowhere.test/", ToolContext(workspace=tmp_path), Limits(lookup=dns))
    assert one_line_error(r) == "web_fetch: cannot resolve nowhere.test (Name or service not known)"

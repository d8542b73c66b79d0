"""One web_fetch exchange: a GET made to a checked address, redirects handled here, the body read
up to a bound, all of it within one time bound.

The request goes to the IP address that was checked (``addresses.checked_addresses``), with the
``Host`` header and, for https, the TLS server name (SNI, and so the certificate check) set to
the host the URL names. A redirect to the same host is followed (at most ``max_redirects``, its
address checked again); one to another host is not: it is returned, for the model to ask for
under that host's own permission. No proxy is taken from the environment: a proxy would make
the connection to a host this module never checked."""

from __future__ import annotations

import asyncio
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.agent.tools.base import ToolError
from app.agent.tools.web.addresses import IPAddress, Lookup, checked_addresses, system_lookup
from app.agent.tools.web.urls import UrlError, WebUrl
from memory.text.lines import one_line

if TYPE_CHECKING:
    import httpx2

__all__ = ["Fetched", "Limits", "Page", "Redirect", "fetch"]

REDIRECTS = frozenset({301, 302, 303, 307, 308})
ERROR_BODY_BYTES = 64 * 1024  # of a page that answered with an error, only its start is read
ACCEPT = "text/html, text/markdown, text/plain;q=0.9, application/json;q=0.9, image/*;q=0.8, */*;q=0.5"


@dataclass(frozen=True)
class Limits:
    """The bounds of one fetch (tests make them small) and the resolver it uses."""

    max_bytes: int = 10 * 1024 * 1024
    timeout: float = 30.0  # seconds for the whole fetch: every lookup, connection, redirect and read
    max_redirects: int = 5
    lookup: Lookup = field(default=system_lookup)


@dataclass(frozen=True)
class Page:
    """An answer that is not a redirect: the URL finally read, its status and body (``cut``: the
    body was longer than the bound and only its start was read)."""

    url: WebUrl
    status: int
    reason: str
    content_type: str
    body: bytes
    cut: bool


@dataclass(frozen=True)
class Redirect:
    """A redirect to another host, not followed: the URL that answered it, and where it leads."""

    url: WebUrl
    status: int
    target: WebUrl


Fetched = Page | Redirect


async def fetch(url: WebUrl, limits: Limits, named: Callable[[str], bool]) -> Fetched:
    """GET ``url`` (see the module doc). ``named(host)``: whether an allow rule names that host
    exactly (it may then be a private address). ToolError (one line) when it cannot be read."""
    # httpx2 is imported with the first fetch, never at start-up.
    import httpx2

    try:
        async with asyncio.timeout(limits.timeout):
            async with httpx2.AsyncClient(
                trust_env=False, follow_redirects=False, timeout=limits.timeout
            ) as client:
                return await _follow(client, url, limits, named)
    except (TimeoutError, httpx2.TimeoutException):
        raise ToolError(f"web_fetch: {url} did not answer in full within {limits.timeout:g} s") from None
    except httpx2.HTTPError as e:
        raise ToolError(one_line(f"web_fetch: could not read {url}: {_reason(e)}", 400)) from None


async def _follow(
    client: httpx2.AsyncClient, url: WebUrl, limits: Limits, named: Callable[[str], bool]
) -> Fetched:
    current = url
    for _ in range(limits.max_redirects + 1):
        # The lookup blocks (getaddrinfo): in a worker thread, bounded by the fetch's time.
        addresses = await asyncio.to_thread(
            checked_addresses, current, named(current.host), limits.lookup, limits.timeout
        )
        response = await _send(client, current, addresses)
        try:
            location = response.headers.get("location")
            if response.status_code in REDIRECTS and location:
                target = _target(current, response.status_code, location)
                if not current.same_host(target):
                    return Redirect(current, response.status_code, target)
                current = target
                continue
            cap = limits.max_bytes if response.is_success else min(limits.max_bytes, ERROR_BODY_BYTES)
            body, cut = await _read(response, cap)
            reason = response.reason_phrase or ""
            return Page(
                current, response.status_code, reason, response.headers.get("content-type", ""), body, cut
            )
        finally:
            await response.aclose()
    raise ToolError(
        f"web_fetch: {url} redirected more than {limits.max_redirects} times; the last redirect, to "
        f"{current}, was not followed"
    )


def _target(current: WebUrl, status: int, location: str) -> WebUrl:
    try:
        return current.join(location)
    except UrlError as e:
        raise ToolError(
            one_line(f"web_fetch: {current} redirected ({status}) to a URL it does not read: {e}", 400)
        ) from None


async def _send(client: httpx2.AsyncClient, url: WebUrl, addresses: list[IPAddress]) -> httpx2.Response:
    """The response (its body not read yet) from the first of ``addresses`` that takes the
    connection."""
    # httpx2 is already loaded by ``fetch``; imported here for its names.
    import httpx2

    headers = {"Host": url.netloc, "User-Agent": _user_agent(), "Accept": ACCEPT}
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    failure: httpx2.ConnectError | None = None
    for ip in addresses:
        request = client.build_request(
            "GET", httpx2.URL(url.text).copy_with(host=str(ip)), headers=headers, extensions=extensions
        )
        try:
            return await client.send(request, stream=True)
        except httpx2.ConnectError as e:  # the next address, if the host has one
            failure = e
    assert failure is not None
    raise ToolError(one_line(f"web_fetch: could not connect to {url.netloc}: {_reason(failure)}", 400))


async def _read(response: httpx2.Response, cap: int) -> tuple[bytes, bool]:
    """The body, up to ``cap`` bytes (after any content encoding is undone); whether it was cut."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        room = cap - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _reason(e: Exception) -> str:
    text = str(e) or type(e).__name__
    return f"{type(e).__name__}: {text}" if text != type(e).__name__ else text


def _user_agent() -> str:
    try:
        version = importlib.metadata.version("pseudoclaude")
    except importlib.metadata.PackageNotFoundError:
        version = "dev"
    return f"PseudoClaude/{version} (web_fetch)"

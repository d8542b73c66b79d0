"""Where web_fetch may connect: never into the person's own network unless a rule names the host.

A host is resolved once per request, in bounded time, and EVERY address it resolves to is checked:
a loopback, private (RFC 1918, carrier-grade NAT), link-local, unique-local, unspecified,
multicast, reserved or cloud-metadata address (an IPv4 address inside IPv6 counted as itself) is
refused unless an allow rule names that host exactly. The request then connects to a checked
address, never resolving the name again (a DNS answer that changes between the check and the
connection cannot swap it)."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable

from app.agent.tools.base import ToolError
from app.agent.tools.web.urls import WebUrl
from memory.text.lines import one_line

__all__ = [
    "METADATA_HOSTS",
    "IPAddress",
    "Lookup",
    "blocked_class",
    "check_without_lookup",
    "checked_addresses",
    "resolve",
    "system_lookup",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# A host name and port to the addresses it resolves to, as text (``getaddrinfo``'s).
Lookup = Callable[[str, int], list[str]]

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network
# The instance metadata services of the clouds (credentials are served there): refused by name
# and by address. Most are link-local or unique-local anyway; Azure's and Alibaba's are not.
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog"})
_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "168.63.129.16", "fd00:ec2::254")
)
_CLASSES: tuple[tuple[_V4 | _V6, str], ...] = (
    (_V4("0.0.0.0/8"), "an unspecified address"),
    (_V6("::/128"), "an unspecified address"),
    (_V4("127.0.0.0/8"), "a loopback address"),
    (_V6("::1/128"), "a loopback address"),
    (_V4("169.254.0.0/16"), "a link-local address"),
    (_V6("fe80::/10"), "a link-local address"),
    (_V4("10.0.0.0/8"), "a private address"),
    (_V4("172.16.0.0/12"), "a private address"),
    (_V4("192.168.0.0/16"), "a private address"),
    (_V4("100.64.0.0/10"), "a private (carrier-grade NAT) address"),
    (_V6("fec0::/10"), "a private (site-local) address"),
    (_V6("fc00::/7"), "a unique-local address"),
    (_V4("224.0.0.0/4"), "a multicast address"),
    (_V6("ff00::/8"), "a multicast address"),
    (_V4("240.0.0.0/4"), "a reserved address"),
)
# IPv6 forms that carry an IPv4 address the packets really go to (NAT64, IPv4-compatible).
_NAT64 = _V6("64:ff9b::/96")
_COMPATIBLE = _V6("::/96")


def blocked_class(ip: IPAddress) -> str | None:
    """What kind of address outside the public internet ``ip`` is ("a loopback address"), or
    None for a public one."""
    if ip in _METADATA:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            kind = blocked_class(inner)
            return f"{kind} (the IPv4 address {inner} inside IPv6)" if kind else None
    for net, kind in _CLASSES:
        if ip in net:
            return kind
    if ip.is_multicast:
        return "a multicast address"
    if not ip.is_global:  # documentation, benchmarking, protocol assignments…
        return "a reserved address"
    return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped, NAT64, 6to4, Teredo's client,
    IPv4-compatible), or None."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or (ip in _COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def system_lookup(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (``getaddrinfo``, TCP). Blocking."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


def resolve(url: WebUrl, lookup: Lookup, timeout: float) -> list[IPAddress]:
    """Every address ``url``'s host resolves to, in the resolver's order; an address given in
    the URL is itself. ToolError (one line) when it does not resolve within ``timeout`` s.
    Blocking: the lookup runs in a thread of its own, so a resolver that hangs is given up."""
    try:
        return [ipaddress.ip_address(url.host)]
    except ValueError:
        pass
    box: list[list[str] | BaseException] = []

    def work() -> None:
        try:
            box.append(lookup(url.host, url.port))
        except BaseException as e:  # handed to the caller
            box.append(e)

    worker = threading.Thread(target=work, name="web_fetch-dns", daemon=True)
    worker.start()
    worker.join(timeout)
    if not box:
        raise ToolError(f"web_fetch: no DNS answer for {url.host} within {timeout:g} s")
    found = box[0]
    if isinstance(found, BaseException):
        reason = found.strerror if isinstance(found, OSError) and found.strerror else found
        raise ToolError(one_line(f"web_fetch: cannot resolve {url.host} ({reason})", 300))
    addresses: list[IPAddress] = []
    for text in found:
        try:
            ip = ipaddress.ip_address(text.split("%", 1)[0])  # an IPv6 zone is no part of the address
        except ValueError:
            continue
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise ToolError(f"web_fetch: {url.host} resolves to no address")
    return addresses


def check_without_lookup(url: WebUrl, named: bool) -> None:
    """The refusal that needs no DNS query (ToolError, one line): a host given as an address
    outside the public internet, a cloud metadata name, ``localhost`` (and ``*.localhost``,
    loopback by definition), unless an allow rule names that host exactly (``named``)."""
    if named:
        return
    host = url.host
    if host in METADATA_HOSTS:
        raise ToolError(_refusal(host, "is a cloud metadata host"))
    if host == "localhost" or host.endswith(".localhost"):
        raise ToolError(_refusal(host, "is a loopback name"))
    try:
        kind = blocked_class(ipaddress.ip_address(host))
    except ValueError:
        return
    if kind is not None:
        raise ToolError(_refusal(host, f"is {kind}"))


def checked_addresses(url: WebUrl, named: bool, lookup: Lookup, timeout: float) -> list[IPAddress]:
    """The addresses to connect to for ``url``: all of them when an allow rule names its host
    exactly (``named``), else all of them if every one is public; ToolError (one line) saying
    which address refuses it. Blocking (it resolves the host)."""
    check_without_lookup(url, named)
    addresses = resolve(url, lookup, timeout)
    if named:
        return addresses
    for ip in addresses:
        kind = blocked_class(ip)
        if kind is not None:
            raise ToolError(_refusal(url.host, f"resolves to {ip}, {kind}"))
    return addresses


def _refusal(host: str, why: str) -> str:
    return (
        f"web_fetch refused {host}: it {why}, not an address on the public internet; "
        f"only an allow rule naming that host exactly (web_fetch(domain:{host})) lets web_fetch reach it"
    )

"""web_fetch never reaches the person's own network: every class of address outside the public
internet is told apart (IPv4 inside IPv6 as itself), every address a host resolves to is checked,
the lookup is bounded in time, and only a rule naming the host exactly lets one through."""

from __future__ import annotations

import ipaddress
import threading
import time

import pytest

from app.agent.tools.base import ToolError
from app.agent.tools.web.addresses import blocked_class, check_without_lookup, checked_addresses, resolve
from app.agent.tools.web.urls import parse_url


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.254", "carrier-grade NAT"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("fc00::1", "unique-local"),
        ("fd12:3456::1", "unique-local"),
        ("fec0::1", "site-local"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("192.0.2.1", "reserved"),  # documentation
        ("198.18.0.1", "reserved"),  # benchmarking
        ("2001:db8::1", "reserved"),  # documentation
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("100.100.100.200", "cloud metadata"),
        ("168.63.129.16", "cloud metadata"),
        # IPv4 inside IPv6 counts as the IPv4 address it stands for.
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("::ffff:0.0.0.0", "unspecified"),
        ("64:ff9b::7f00:1", "loopback"),  # NAT64
        ("2002:c0a8:0101::1", "private"),  # 6to4 of 192.168.1.1
        ("::127.0.0.1", "loopback"),  # IPv4-compatible
    ],
)
def test_each_class_outside_the_public_internet_is_named(address: str, kind: str) -> None:
    found = blocked_class(ipaddress.ip_address(address))
    assert found is not None and kind in found, (address, found)


@pytest.mark.parametrize(
    "address",
    ["93.184.215.14", "8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"],
)
def test_a_public_address_passes(address: str) -> None:
    assert blocked_class(ipaddress.ip_address(address)) is None


def _lookup(answers: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    def lookup(host: str, port: int) -> list[str]:
        return answers[host]

    return lookup


def test_every_resolved_address_is_checked_one_private_is_enough_to_refuse() -> None:
    url = parse_url("https://mixed.test/page")
    lookup = _lookup({"mixed.test": ["93.184.215.14", "10.0.0.7"]})
    with pytest.raises(ToolError) as e:
        checked_addresses(url, False, lookup, 5)
    reason = str(e.value)
    assert "mixed.test" in reason and "10.0.0.7" in reason and "private" in reason and "\n" not in reason
    assert "web_fetch(domain:mixed.test)" in reason
    # The same, the private one first: the order does not matter.
    lookup = _lookup({"mixed.test": ["::ffff:127.0.0.1", "93.184.215.14"]})
    with pytest.raises(ToolError, match="loopback"):
        checked_addresses(url, False, lookup, 5)


def test_public_addresses_are_given_in_order_and_a_named_host_may_be_private() -> None:
    url = parse_url("http://docs.test/")
    lookup = _lookup({"docs.test": ["93.184.215.14", "2606:4700::1111", "93.184.215.14"]})
    assert [str(ip) for ip in checked_addresses(url, False, lookup, 5)] == [
        "93.184.215.14",
        "2606:4700::1111",
    ]
    inside = _lookup({"docs.test": ["192.168.1.20", "fe80::1%eth0"]})
    assert [str(ip) for ip in checked_addresses(url, True, inside, 5)] == ["192.168.1.20", "fe80::1"]


def test_an_address_in_the_url_is_not_looked_up() -> None:
    def lookup(host: str, port: int) -> list[str]:
        raise AssertionError("an address was looked up")

    assert [str(ip) for ip in resolve(parse_url("http://[2606:4700::1111]:8080/"), lookup, 5)] == [
        "2606:4700::1111"
    ]
    with pytest.raises(ToolError, match="is a loopback address"):
        checked_addresses(parse_url("http://127.0.0.1:8000/"), False, lookup, 5)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://localhost:8000/", "loopback name"),
        ("http://app.localhost/", "loopback name"),
        ("http://metadata.google.internal/computeMetadata/v1/", "cloud metadata host"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata address"),
        ("http://[::1]/", "loopback"),
        ("http://[::ffff:192.168.0.1]/", "private"),
        ("http://0.0.0.0:8080/", "unspecified"),
    ],
)
def test_what_needs_no_lookup_is_refused_without_one(url: str, why: str) -> None:
    with pytest.raises(ToolError) as e:
        check_without_lookup(parse_url(url), False)
    assert why in str(e.value) and "\n" not in str(e.value)
    check_without_lookup(parse_url(url), True)  # a rule naming the host exactly lets it through


def test_a_name_is_left_to_the_lookup_when_the_call_runs() -> None:
    check_without_lookup(parse_url("https://docs.python.org/3/"), False)
    check_without_lookup(parse_url("http://intranet.corp/"), False)


def test_a_lookup_that_hangs_is_given_up_in_one_line() -> None:
    release = threading.Event()

    def hanging(host: str, port: int) -> list[str]:
        release.wait(30)
        return ["93.184.215.14"]

    started = time.monotonic()
    try:
        with pytest.raises(ToolError) as e:
            resolve(parse_url("http://slow.test/"), hanging, 0.2)
    finally:
        release.set()
    assert time.monotonic() - started < 10
    assert str(e.value) == "web_fetch: no DNS answer for slow.test within 0.2 s"


def test_a_name_that_does_not_resolve_is_one_line() -> None:
    import socket

    def failing(host: str, port: int) -> list[str]:
        raise socket.gaierror(-2, "Name or service not known")

    with pytest.raises(ToolError) as e:
        resolve(parse_url("http://nowhere.test/"), failing, 5)
    assert str(e.value) == "web_fetch: cannot resolve nowhere.test (Name or service not known)"

"""The hosts a ``domain:`` rule names (``web_fetch(domain:docs.python.org)``), and whether the host
a call reaches is one of them.

A pattern is ``domain:HOST``, exactly that host, or ``domain:*.SUFFIX``, any name ending in
``.SUFFIX`` at any depth but not SUFFIX itself: ``*.python.org`` covers ``docs.python.org`` and
``a.b.python.org``, never ``python.org`` (write ``domain:python.org`` too for that). A wildcard
names domain names, never an address, and never counts as naming a host exactly (what a
loopback or private address needs, see ``PermissionRules.names_host``).

Both sides are compared as the web tool reaches the host: lower case, IDNA-encoded
(``bücher.example`` is ``xn--bcher-kva.example``: a look-alike letter never passes for
another), without a trailing dot; an IPv6 address without brackets and in its short form
(``[::1]``, ``::1`` and ``0:0::1`` are one host). Nothing else is a pattern: no scheme, port,
path, user name, space, or ``*`` anywhere but a leading ``*.``.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

__all__ = ["DomainPattern", "HostError", "domain_rule", "host_key", "parse_domain_pattern"]

PREFIX = "domain:"
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_MAX_HOST_CHARS = 253


class HostError(ValueError):
    """A host or a ``domain:`` pattern that cannot be used, with a one-line reason."""


class DomainPattern(BaseModel):
    """A ``domain:`` pattern read: the host (or, for a wildcard, the suffix after ``*.``)."""

    model_config = ConfigDict(frozen=True)

    host: str
    wildcard: bool = False

    def matches(self, key: str) -> bool:
        """Whether the host ``key`` (as ``host_key`` gives it) is one this pattern names."""
        if not self.wildcard:
            return key == self.host
        return key.endswith("." + self.host) and not _is_address(key)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _idna(host: str) -> str:
    # Only a host with a letter beyond ASCII needs the IDNA tables: loaded the first time one does.
    import idna

    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError) as e:
        raise HostError(f"not a valid international host name ({' '.join(str(e).split())})") from None


def normalize_host(raw: str) -> str:
    """``raw`` as the web tool reaches it: lower case, IDNA, no trailing dot, an IPv6 address
    unbracketed and short. HostError (one line) when it is not a host."""
    bracketed = raw.startswith("[") and raw.endswith("]")
    host = raw[1:-1] if bracketed else raw
    if bracketed or ":" in host:
        if "%" in host:
            raise HostError("an IPv6 address with a zone (%) is not a host a rule can name")
        try:
            return ipaddress.IPv6Address(host).compressed
        except ValueError:
            why = (
                "brackets hold an IPv6 address" if bracketed else "a domain rule names a host without a port"
            )
            raise HostError(why) from None
    host = host.removesuffix(".")
    if not host:
        raise HostError("the host is empty")
    host = host.lower() if host.isascii() else _idna(host)
    if len(host) > _MAX_HOST_CHARS or not all(_LABEL.fullmatch(label) for label in host.split(".")):
        raise HostError(f"not a host name: {host[:80]!r}")
    return host


def host_key(host: str) -> str | None:
    """The host a call reaches, normalised as a rule's is; None when it is no host (then only a
    rule covering every call of the tool matches)."""
    try:
        return normalize_host(host)
    except HostError:
        return None


def _shape_problem(tool: str, text: str) -> str | None:
    """Why ``text`` is not shaped like ``domain:HOST``, before its host is read; None when it is."""
    if "://" in text:
        return f"name the host alone, without a scheme: {tool}(domain:docs.python.org)"
    if not text.startswith(PREFIX):
        return f"a {tool} pattern is domain:HOST, as in {tool}(domain:docs.python.org)"
    host = text[len(PREFIX) :]
    if host in ("", "*", "*."):
        return f"no host named: write {tool} alone to cover every public host"
    if any(c.isspace() for c in host):
        return "a host has no spaces"
    if any(c in host for c in "/?#\\"):
        return "a domain rule names a host, not a path"
    if "@" in host:
        return "a domain rule names a host, without a user name (@)"
    if "*" in host and not (host.startswith("*.") and "*" not in host[2:]):
        return "a * may only start the host, as in domain:*.python.org"
    if host.startswith("[") and not host.endswith("]"):
        return "a domain rule names a host without a port"
    return None


@lru_cache(maxsize=1024)
def parse_domain_pattern(tool: str, text: str) -> DomainPattern:
    """A rule's pattern for ``tool`` (``domain:HOST`` or ``domain:*.SUFFIX``) read; HostError
    with a one-line reason when it is not one."""
    problem = _shape_problem(tool, text)
    if problem is not None:
        raise HostError(problem)
    host = text[len(PREFIX) :]
    wildcard = host.startswith("*.")
    key = normalize_host(host[2:] if wildcard else host)
    if wildcard and (_is_address(key) or key.rsplit(".", 1)[-1].isdigit()):
        raise HostError("a wildcard names domain names, never an address")
    return DomainPattern(host=key, wildcard=wildcard)


def domain_rule(tool: str, host: str) -> str | None:
    """The rule naming exactly this host for ``tool`` (an IPv6 address in brackets); None when
    ``host`` is no host."""
    key = host_key(host)
    if key is None:
        return None
    return f"{tool}({PREFIX}{f'[{key}]' if ':' in key else key})"

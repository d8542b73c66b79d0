"""A URL web_fetch may read: ``http`` or ``https``, a host, no user name or password, at most
:data:`MAX_URL_CHARS` characters. Its host is kept the way a permission rule names it: lower
case, IDNA-encoded, without a trailing dot, an IPv6 address without brackets."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from memory.text.lines import one_line

__all__ = ["DEFAULT_PORTS", "MAX_URL_CHARS", "UrlError", "WebUrl", "parse_url"]

MAX_URL_CHARS = 2000
DEFAULT_PORTS = {"http": 80, "https": 443}
# One label of a host name: letters, digits, hyphens, and underscores (seen in real names).
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class UrlError(ValueError):
    """A URL web_fetch does not read, with a one-line reason."""


@dataclass(frozen=True)
class WebUrl:
    """A checked URL: ``target`` is its path and query as given (``/`` when it has none); a
    fragment is never sent, so it is not kept."""

    scheme: str
    host: str
    port: int
    target: str

    @property
    def is_ipv6(self) -> bool:
        return ":" in self.host

    @property
    def netloc(self) -> str:
        """The host (an IPv6 address in brackets) and the port when it is not the scheme's own:
        also the ``Host`` header."""
        host = f"[{self.host}]" if self.is_ipv6 else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def text(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.target}"

    def __str__(self) -> str:
        return self.text

    def join(self, location: str) -> WebUrl:
        """Where a redirect's ``Location`` (relative or absolute) leads from here; UrlError when
        it is no URL web_fetch reads."""
        return parse_url(urljoin(self.text, location.strip()))

    def same_host(self, other: WebUrl) -> bool:
        """Whether a redirect from here to ``other`` stays on this host: the same host, scheme
        and port, or the same host moving from http to https on the default ports."""
        if self.host != other.host:
            return False
        if (self.scheme, self.port) == (other.scheme, other.port):
            return True
        return (self.scheme, self.port, other.scheme, other.port) == ("http", 80, "https", 443)


def parse_url(raw: str) -> WebUrl:
    """``raw`` as a :class:`WebUrl`; UrlError with one line saying what is wrong with it."""
    value = raw.strip()
    if len(value) > MAX_URL_CHARS:
        raise UrlError(
            f"the URL is {len(value):,} characters long; web_fetch reads URLs of at most {MAX_URL_CHARS:,}"
        )
    if _CONTROL.search(value):
        raise UrlError("the URL holds a control character or a line break")
    try:
        parts = urlsplit(value)
    except ValueError:  # a bracketed host that is no IPv6 address
        raise UrlError(f"not a valid URL: {_shown(value)}") from None
    scheme = parts.scheme.lower()
    if not scheme or not value.lower().startswith(f"{scheme}:"):
        raise UrlError(f"not a full URL: {_shown(value)} (it starts with http:// or https://)")
    if scheme not in DEFAULT_PORTS:
        raise UrlError(f"web_fetch reads http and https URLs only, not {_shown(scheme)}")
    if "@" in parts.netloc:
        raise UrlError("a URL with a user name or password (user:password@host) is refused")
    host = _host(parts.netloc)
    try:
        port = parts.port
    except ValueError:
        raise UrlError(f"the URL's port is not a number from 1 to 65535: {_shown(parts.netloc)}") from None
    if port == 0:
        raise UrlError("the URL's port is not a number from 1 to 65535: 0")
    target = parts.path or "/"
    if parts.query:
        target += f"?{parts.query}"
    return WebUrl(scheme, host, port if port is not None else DEFAULT_PORTS[scheme], target)


def _host(netloc: str) -> str:
    """The host of ``netloc`` (no user info in it) as a rule names it; UrlError when it has none
    or it is not a valid host name or address."""
    if netloc.startswith("["):
        end = netloc.find("]")
        inside = netloc[1:end] if end > 0 else ""
        if "%" in inside:
            raise UrlError("an IPv6 address with a zone (%) is refused")
        try:
            return ipaddress.IPv6Address(inside).compressed
        except ValueError:
            raise UrlError(f"not a valid IPv6 address: {_shown(inside)}") from None
    name = netloc.rsplit(":", 1)[0] if ":" in netloc else netloc
    if not name:
        raise UrlError("the URL names no host")
    if name.endswith("."):
        name = name[:-1]
    try:
        ascii_name = name.lower() if name.isascii() else _idna(name)
    except UnicodeError:
        raise UrlError(f"not a valid host name: {_shown(name)}") from None
    labels = ascii_name.split(".")
    if len(ascii_name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise UrlError(f"not a valid host name: {_shown(name)}")
    return ascii_name


def _idna(name: str) -> str:
    """An international name as the network (and the permission rules) spell it: IDNA 2008 with
    UTS 46 mapping, as browsers do (``straße.de`` stays ``xn--strae-oqa.de``; the codec of the
    standard library, IDNA 2003, would make it ``strasse.de``, another domain)."""
    # Only a non-ASCII host needs the table: loaded then, not with the tool.
    import idna

    try:
        return idna.encode(name, uts46=True).decode("ascii")
    except idna.IDNAError as e:
        raise UnicodeError(str(e)) from None


def _shown(value: str) -> str:
    return repr(one_line(value, 120))

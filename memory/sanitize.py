"""Pure text hygiene for the memory core: one-line titles, secret redaction, safe names, slugs.

Nothing here touches the disk. Everything a model or a cloned repository writes passes
through these functions before it reaches a store, the index or the prompt (DESIGN §3–§5).
"""

from __future__ import annotations

import bisect
import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable

from .model import INDEX_FILE, MAX_SLUG, MAX_SUMMARY, MAX_TITLE, NoteType

__all__ = [
    "check_filename",
    "defuse_tags",
    "is_strict_utf8",
    "is_unsafe_char",
    "note_filename",
    "redact",
    "sanitize_line",
    "sanitize_summary",
    "sanitize_title",
    "slugify",
]

# Bidi and zero-width characters are all in category Cf; they are listed so the intent is
# explicit and checked by the tests even if a future Unicode version reclassified one.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff")


def is_unsafe_char(c: str) -> bool:
    """Control (Cc), format (Cf: bidi, zero-width, tag characters), line/paragraph separators
    and surrogates: characters that can hide text or inject structure into one line."""
    if c in _BIDI or c in _ZERO_WIDTH:
        return True
    return unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")


def is_strict_utf8(s: str) -> bool:
    """False when ``s`` holds a lone surrogate (it could not be written as UTF-8)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sanitize_line(s: str, max_chars: int) -> str:
    """One line of plain text: whitespace collapsed, invisible/control characters removed,
    no leading ``#`` (so it cannot become a Markdown header), at most ``max_chars`` code points."""
    out: list[str] = []
    for c in s:
        if c.isspace():
            out.append(" ")
        elif not is_unsafe_char(c):
            out.append(c)
    text = re.sub(r" {2,}", " ", "".join(out)).lstrip("# ").strip()
    # rstrip again: cutting may leave a trailing space; the result stays idempotent.
    return text[: max(max_chars, 0)].rstrip()


def sanitize_title(s: str) -> str:
    return sanitize_line(s, MAX_TITLE)


def sanitize_summary(s: str) -> str:
    return sanitize_line(s, MAX_SUMMARY)


def defuse_tags(text: str, tags: Iterable[str]) -> str:
    """Escape ``<tag`` / ``</tag`` for the delimiters a prompt uses, so untrusted text inside
    them cannot close its block and pose as instructions (``</memory-index>`` -> ``&lt;/memory-index>``)."""
    names = "|".join(re.escape(t) for t in tags)
    if not names:
        return text
    return re.sub(rf"<(\s*/?\s*(?:{names}))(?![A-Za-z0-9_-])", r"&lt;\1", text, flags=re.IGNORECASE)


# -- redaction ---------------------------------------------------------------------------

_MARK = "[REDACTED:"


def _mark(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _is_marker(value: str) -> bool:
    return value.startswith(_MARK)


# A value that only refers to a secret (an env var, a template, a placeholder) is kept: it is
# useful knowledge ("uses $GITHUB_TOKEN") and not a secret itself.
_REFERENCE_RE = re.compile(
    r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\([^)]*\)|%[A-Za-z_][A-Za-z0-9_]*%|\{\{.*\}\}|<[^<>]*>|\*+|x+|\.\.\.)$",
    re.IGNORECASE,
)


def _is_reference(value: str) -> bool:
    return bool(_REFERENCE_RE.match(value))


_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
_PEM_BEGIN_RE = re.compile(rf"-----BEGIN {_PEM_LABEL}-----")
_PEM_END_RE = re.compile(rf"-----END {_PEM_LABEL}-----")
# Key material after a BEGIN line that has no END line (a cut-off paste): base64 lines and
# ``Proc-Type:``-style headers.
_PEM_TAIL_RE = re.compile(
    r"(?:\s*(?:[A-Za-z0-9+/]{16,}={0,2}|(?<=\n)[A-Za-z0-9+/]+={0,2}(?=\r?\n|$)|[A-Za-z-]+: [^\n]*))*"
)


def _redact_private_keys(text: str) -> str:
    """Each BEGIN ... END block (the first END after it) or, without an END, the BEGIN line and
    the key material after it. END positions are found once: no rescan per BEGIN."""
    if "PRIVATE KEY" not in text:
        return text
    end_starts: list[int] = []
    end_ends: list[int] = []
    for m in _PEM_END_RE.finditer(text):
        end_starts.append(m.start())
        end_ends.append(m.end())
    out: list[str] = []
    pos = 0
    for m in _PEM_BEGIN_RE.finditer(text):
        if m.start() < pos:
            continue  # inside a block already redacted
        j = bisect.bisect_left(end_starts, m.end())
        stop = end_ends[j] if j < len(end_starts) else _PEM_TAIL_RE.match(text, m.end()).end()  # type: ignore[union-attr]
        out.append(text[pos : m.start()])
        out.append(_mark("private_key"))
        pos = stop
    out.append(text[pos:])
    return "".join(out)


_URL_RE = re.compile(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*://)([^\s:/@?#\[\]]*):([^\s/?#]+)")
_AUTH_HEADER_RE = re.compile(
    r"(?i)(\bauthorization\s*[:=]\s*[\"']?\s*)(?:(bearer|basic|token|bot)\s+)?([^\s\"',;]+)"
)
_BEARER_RE = re.compile(r"\b(Bearer\s+)([A-Za-z0-9\-._~+/]{16,}=*)")
_JWT_RE = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*")

# (kind, pattern) for tokens whose shape alone identifies them.
_TOKEN_RES: list[tuple[str, re.Pattern[str]]] = [
    ("anthropic_key", re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai_key", re.compile(r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}")),
    ("aws_access_key", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
    (
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ),
    (
        "slack_token",
        re.compile(r"(?<![A-Za-z0-9_-])(?:xox[abprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})"),
    ),
    ("google_api_key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
]


def _keylike(body: str) -> bool:
    """Key material, not hyphenated words like ``sk-learn-compatibility-notes``: a stretch of
    16+ characters mixing letters and digits, or a long mixed-case run with digits."""
    for part in re.split(r"[-_]", body):
        if len(part) >= 16 and re.search(r"[0-9]", part) and re.search(r"[A-Za-z]", part):
            return True
    return (
        len(body) >= 32
        and re.search(r"[0-9]", body) is not None
        and re.search(r"[a-z]", body) is not None
        and re.search(r"[A-Z]", body) is not None
    )


def _tokenish(value: str, scheme: str | None) -> bool:
    """An Authorization value, not a word of prose ("Authorization: handled upstream")."""
    if scheme is not None and scheme.lower() == "basic":
        return len(value) >= 8
    return len(value) >= 8 and (not value.isalpha() or len(value) >= 24)


# Generic ``key = value`` / ``key: value``: the key's LAST word must name a secret, so
# ``password_field`` or ``max_tokens`` are left alone.
_SECRET_WORD = (
    r"(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key"
    r"|private[_-]?key|auth[_-]?key|signing[_-]?key|encryption[_-]?key|credentials?)"
)
_ASSIGN_RE = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.-])(?P<q>[\"']?)(?P<key>(?:[A-Za-z0-9]+[_.-])*{_SECRET_WORD})(?P=q)"
    r"(?P<sep>[ \t]*(?::(?!:)|=(?!=|>))[ \t]*)"
    r"(?:(?P<dq>\"(?:[^\"\\\n]|\\.)*\")|(?P<sq>'(?:[^'\\\n]|\\.)*')|(?P<bare>[^\s\"'`,;&]+))"
)
# Unquoted values that are code or types, not secrets: ``token: str``, ``password = None``.
_NOT_A_VALUE = frozenset(
    "none null nil true false undefined str string int bool bytes any object number optional secretstr "
    "self cls required".split()
)


def _assign_kind(key: str) -> str:
    k = key.lower()
    if re.search(r"(password|passwd|passphrase)$", k):
        return "password"
    if k.endswith("token"):
        return "token"
    if re.search(r"credentials?$", k):
        return "credentials"
    if k.endswith("secret"):
        return "secret"
    return "api_key"


def _bare_is_secret(value: str, key: str, sep: str, rest_of_line: str) -> bool:
    if _is_marker(value) or _is_reference(value):
        return False
    if value.lower() in _NOT_A_VALUE or value.lower() == key.lower():
        return False
    # Code, not a literal: calls, indexing, attribute paths (``self._token``), annotations.
    if any(ch in value for ch in "()[]{}"):
        return False
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\.?", value):
        return False
    if re.fullmatch(r"\d{1,5}", value):
        return False  # counts and limits (``max_token: 512``)
    # ``key: value`` is YAML-like only when the value is the rest of the line; in prose
    # ("token: we use JWTs") it is not a value.
    return not (":" in sep and rest_of_line.strip() and not rest_of_line.lstrip().startswith("#"))


def _redact_assign(m: re.Match[str]) -> str:
    kind = _assign_kind(m.group("key"))
    head = m.group(0)[: m.start("sep") - m.start(0)] + m.group("sep")
    for name in ("dq", "sq"):
        quoted = m.group(name)
        if quoted is not None:
            inner = quoted[1:-1]
            if not inner or _is_marker(inner) or _is_reference(inner) or re.fullmatch(r"%[sdr]|\{\}", inner):
                return m.group(0)
            return f"{head}{quoted[0]}{_mark(kind)}{quoted[0]}"
    value = m.group("bare")
    line_end = m.string.find("\n", m.end())
    rest = m.string[m.end() : len(m.string) if line_end < 0 else line_end]
    if not _bare_is_secret(value, m.group("key"), m.group("sep"), rest):
        return m.group(0)
    return f"{head}{_mark(kind)}"


def _redact_url(m: re.Match[str]) -> str:
    scheme, user, rest = m.group(1), m.group(2), m.group(3)
    at = rest.rfind("@")
    if at <= 0:
        return m.group(0)  # host:port, no password
    password = rest[:at]
    if _is_marker(password) or _is_reference(password):
        return m.group(0)
    return f"{scheme}{user}:{_mark('url_password')}{rest[at:]}"


def _redact_auth_header(m: re.Match[str]) -> str:
    head, scheme, value = m.group(1), m.group(2), m.group(3)
    if _is_marker(value) or _is_reference(value) or not _tokenish(value, scheme):
        return m.group(0)
    kind = "bearer" if scheme is None or scheme.lower() == "bearer" else "authorization"
    return f"{head}{scheme + ' ' if scheme else ''}{_mark(kind)}"


def _redact_bearer(m: re.Match[str]) -> str:
    if not re.search(r"[0-9]", m.group(2)):
        return m.group(0)  # "Bearer authentication" is prose
    return f"{m.group(1)}{_mark('bearer')}"


def _simple(kind: str, check: Callable[[str], bool] | None = None) -> Callable[[re.Match[str]], str]:
    def repl(m: re.Match[str]) -> str:
        if check is not None and not check(m.group(0)):
            return m.group(0)
        return _mark(kind)

    return repl


def _sk_check(token: str) -> bool:
    return _keylike(re.sub(r"^sk-(?:ant-|proj-|svcacct-|admin-|None-)?", "", token))


def redact(text: str) -> str:
    """Replace secrets by ``[REDACTED:<kind>]``; idempotent, and ordinary prose/code is kept.

    Context patterns (PEM blocks, URLs, auth headers) run first so their kind wins; generic
    ``key = value`` runs last and leaves values that are already redacted alone.
    """
    if not text:
        return text
    text = _redact_private_keys(text)
    text = _URL_RE.sub(_redact_url, text)
    text = _AUTH_HEADER_RE.sub(_redact_auth_header, text)
    text = _BEARER_RE.sub(_redact_bearer, text)
    text = _JWT_RE.sub(_mark("jwt"), text)
    for kind, pattern in _TOKEN_RES:
        check = _sk_check if kind in ("anthropic_key", "openai_key") else None
        text = pattern.sub(_simple(kind, check), text)
    return _ASSIGN_RE.sub(_redact_assign, text)


# -- names -------------------------------------------------------------------------------


def check_filename(name: str) -> str | None:
    """Why ``name`` cannot be a targeted note filename, or None. Lexical only: existence,
    symlinks and hard links are the store's checks."""
    if not isinstance(name, str):
        return "filename must be a string"
    if name == "":
        return "filename is empty"
    if not is_strict_utf8(name):
        return "filename is not valid UTF-8 (lone surrogate)"
    if len(name.encode("utf-8")) > 255:
        return "filename is longer than 255 bytes"
    if "\x00" in name:
        return "filename contains a NUL character"
    if "/" in name or "\\" in name:
        return f"filename {name!r} contains a path separator"
    if name in (".", "..") or ".." in name:
        return f"filename {name!r} contains '..'"
    if any(is_unsafe_char(c) for c in name):
        return f"filename {name!r} contains control, bidi or invisible characters"
    if name != name.strip():
        return f"filename {name!r} has leading or trailing whitespace"
    if name.startswith("."):
        return f"filename {name!r} starts with a dot"
    if name.startswith("-"):
        return f"filename {name!r} starts with '-'"
    if unicodedata.normalize("NFKC", name).casefold() == INDEX_FILE.casefold():
        return f"{INDEX_FILE} is the index, not a note"
    if not name.endswith(".md"):
        return f"filename {name!r} does not end in .md"
    return None


def _slug_of(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:MAX_SLUG].rstrip("-")


def slugify(title: str, slug: str | None) -> str:
    """The slug part of a created note's name (DESIGN §3); never empty."""
    for source in (slug, title):
        if source:
            s = _slug_of(source)
            if s:
                return s
    digest = hashlib.sha256(title.encode("utf-8", "surrogatepass")).hexdigest()
    return f"note-{digest[:8]}"


def note_filename(type: NoteType | str, slug: str) -> str:
    return f"{NoteType(type).value}_{slug}.md"

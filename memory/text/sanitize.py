"""Pure text hygiene: one-line titles, secret redaction, safe names, slugs, terminal display.

Nothing here touches the disk. Everything a model or a cloned repository writes passes
through these functions before it reaches a store, the index or the prompt (DESIGN §3–§5);
``strip_terminal`` is the one filter for text shown on a terminal (print mode, CLI, app).
"""

from __future__ import annotations

import bisect
import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable

from memory.constants import INDEX_FILE, MAX_SLUG, MAX_SUMMARY, MAX_TITLE, NoteType

__all__ = [
    "TerminalStreamStripper",
    "check_filename",
    "defuse_tags",
    "is_strict_utf8",
    "is_unsafe_char",
    "line_count",
    "note_filename",
    "quote",
    "redact",
    "redact_url_credentials",
    "sanitize_line",
    "sanitize_summary",
    "sanitize_title",
    "slugify",
    "split_lines",
    "strip_escape_sequences",
    "strip_terminal",
    "strip_terminal_deep",
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
    no leading ``#`` (so it cannot become a Markdown header), at most ``max_chars`` code points.
    Escape sequences go first and whole, so no remnant such as ``[31m`` is left."""
    s = strip_escape_sequences(s)
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
#
# The token shapes follow detect-secrets' plugins (Yelp/detect-secrets 1.5: aws, github,
# gitlab, stripe, npm, sendgrid, slack, twilio, mailchimp, square, pypi, telegram, discord,
# artifactory, azure, jwt, private keys, basic auth, keyword) plus current vendors it lacks.
# The package itself is not used: it scans line by line for files (about 1.3 s per MiB with
# its regex plugins alone), returns values rather than spans, keeps global settings, pulls in
# requests, its entropy plugins flag commit hashes and UUIDs, and it misses command-line forms
# (`--password x`, `mysql -pPASS`, `curl -u user:pass`) and zero-width-split keys.

_MARK = "[REDACTED:"


def _mark(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _is_marker(value: str) -> bool:
    return value.lstrip("\"'").startswith(_MARK)


# A value that only refers to a secret (an env var, a template, a placeholder) is kept: it is
# useful knowledge ("uses $GITHUB_TOKEN") and not a secret itself.
_REFERENCE_RE = re.compile(
    r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\([^)]*\)|%[A-Za-z_][A-Za-z0-9_]*%|\{\{.*\}\}|\{[A-Za-z_0-9.!:]*\}"
    r"|%\(?[A-Za-z_]*\)?[sdrf]|<[^<>]*>|\*+|\.\.\.|…)$",
    re.IGNORECASE,
)


def _is_reference(value: str) -> bool:
    """A placeholder (``$TOKEN``, ``{token}``, ``%s``, ``<password>``) or a mask (``****``,
    ``:****``): nothing in it could be a secret."""
    return bool(_REFERENCE_RE.match(value)) or not re.search(r"[^\W_]", value)


_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
_PEM_BEGIN_RE = re.compile(rf"-----BEGIN {_PEM_LABEL}-----")
_PEM_END_RE = re.compile(rf"-----END {_PEM_LABEL}-----")
# Key material after a BEGIN line that has no END line (a cut-off paste): base64 lines and
# ``Proc-Type:``-style headers.
_PEM_TAIL_RE = re.compile(
    r"(?:\s*(?:[A-Za-z0-9+/]{16,}={0,2}|(?<=\n)[A-Za-z0-9+/]+={0,2}(?=\r?\n|$)|[A-Za-z-]+: [^\n]*))*"
)
# PuTTY key files keep the private half between "Private-Lines: N" and "Private-MAC: ...".
_PUTTY_RE = re.compile(
    r"Private-Lines:[ \t]*\d+[ \t]*\r?\n(?:[ \t]*[A-Za-z0-9+/]+={0,2}[ \t]*(?:\r?\n|$))*(?:Private-(?:MAC|Hash):[^\n]*)?"
)


def _redact_private_keys(text: str) -> str:
    """Each BEGIN ... END block (the first END after it) or, without an END, the BEGIN line and
    the key material after it. END positions are found once: no rescan per BEGIN."""
    if "Private-Lines:" in text:
        text = _PUTTY_RE.sub(_mark("private_key"), text)
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


# scheme://user:password@host — the password is whatever lies between the first ':' after the
# user and the last '@' before the host (an unencoded '@' in a password is common).
_URL_RE = re.compile(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*://)([^\s:/@?#\[\]]*):([^\s/?#]+)")


def _redact_url(m: re.Match[str]) -> str:
    scheme, user, rest = m.group(1), m.group(2), m.group(3)
    at = rest.rfind("@")
    if at <= 0:
        return m.group(0)  # host:port, no password
    password = rest[:at]
    # Even ``user:pass@`` is redacted: it may be the real one (issue 6 quotes exactly that).
    if _is_marker(password) or _is_reference(password):
        return m.group(0)
    return f"{scheme}{user}:{_mark('url_password')}{rest[at:]}"


def redact_url_credentials(text: str) -> str:
    """Only the passwords of ``scheme://user:password@host`` URLs, user and host kept: for
    diagnostics that print a configured URL (``ANTHROPIC_BASE_URL``). ``redact`` does this too."""
    if "://" not in text:
        return text
    return _URL_RE.sub(_redact_url, text)


# -- headers and command lines --

_AUTH_HEADER_RE = re.compile(
    r"(?i)(\b(?:proxy-)?authorization\s*[:=]\s*[\"']?\s*)(?:(bearer|basic|token|bot|digest|negotiate)\s+)?([^\s\"',;]+)"
)
_BEARER_RE = re.compile(r"\b(Bearer\s+)([A-Za-z0-9\-._~+/]{16,}=*)")


def _tokenish(value: str, scheme: str | None) -> bool:
    """An Authorization value, not a word of prose ("Authorization: handled upstream"). With a
    scheme the header is unmistakable: any value of 8+ characters is a credential."""
    if scheme is not None:
        return len(value) >= 8
    return len(value) >= 8 and (not value.isalpha() or len(value) >= 24)


def _redact_auth_header(m: re.Match[str]) -> str:
    head, scheme, value = m.group(1), m.group(2), m.group(3)
    if _is_marker(value) or _is_reference(value) or not _tokenish(value, scheme):
        return m.group(0)
    kind = "bearer" if scheme is None or scheme.lower() == "bearer" else "authorization"
    return f"{head}{scheme + ' ' if scheme else ''}{_mark(kind)}"


def _random_looking(value: str) -> bool:
    """Digits, or many case changes (``aBcDeF...``): a token, not a word or a CamelCase name."""
    if re.search(r"[0-9]", value):
        return True
    letters = re.sub(r"[^A-Za-z]", "", value)
    if len(letters) < 16 or letters.islower() or letters.isupper():
        return False
    return len(re.findall(r"[a-z][A-Z]|[A-Z][A-Z][a-z]", letters)) >= 3 and not re.fullmatch(
        r"(?:[A-Z][a-z]+)+", letters
    )


def _redact_bearer(m: re.Match[str]) -> str:
    if _is_marker(m.group(2)) or not _random_looking(m.group(2)):
        return m.group(0)  # "Bearer authentication" is prose
    return f"{m.group(1)}{_mark('bearer')}"


# Option values: ``--password x``, ``--db-password=x``, ``-Djavax.net.ssl.keyStorePassword=x``.
_QUOTED = r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'"
# A name (matched possessively) must end in a word that may name a secret: a match that is not
# one would swallow text (``https://...?token=x``, ``--verbose --password x``) unexamined.
_ENDS_IN_SECRET_WORD = (
    "(?:"
    + "|".join(
        f"(?<={w})"
        for w in "password passwd passphrase pass pwd secret token key base auth credential credentials".split()
    )
    + ")"
)
_FLAG_RE = re.compile(
    rf"(?i)(?<![A-Za-z0-9_-])(?P<flag>--?[A-Za-z][A-Za-z0-9._-]{{0,80}}+){_ENDS_IN_SECRET_WORD}(?P<sep>=|[ \t]+)"
    rf"(?:(?<==)|(?!-))(?P<value>{_QUOTED}|[^\s\"'`;&|)]+)"
)
# Words that follow an option name in prose ("the --password flag", "pass --token to it").
_PROSE_AFTER_FLAG = frozenset(
    "a an and any are arg argument as at be but by can flag for from here if in instead is it must not "
    "of on only option options or parameter parameters param should switch that the then there this to "
    "value was when which will with flags arguments".split()
)


def _quoted_inner(value: str) -> str | None:
    if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        return value[1:-1]
    return None


def _redact_flag(m: re.Match[str]) -> str:
    flag = m.group("flag")
    name = flag.lstrip("-")
    if name.lower().startswith("no-"):
        return m.group(0)
    kind = _key_kind(name)
    value = m.group("value")
    inner = _quoted_inner(value)
    if kind is None or _is_marker(value):
        return m.group(0)
    if inner is not None:
        if not inner or _is_reference(inner):
            return m.group(0)
        return f"{flag}{m.group('sep')}{value[0]}{_mark(kind)}{value[0]}"
    if _is_reference(value) or value.lower() in _NOT_A_VALUE:
        return m.group(0)
    if m.group("sep") != "=" and (value.startswith("-") or value.lower() in _PROSE_AFTER_FLAG):
        return m.group(0)
    if name.lower() == "pwd" and value.startswith(("/", "~", ".")):
        return m.group(0)
    return f"{flag}{m.group('sep')}{_mark(kind)}"


# Commands whose password goes in a short option: ``curl -u user:pass``, ``mysql -pPASS``
# (attached: ``-p PASS`` asks for the password and PASS is the database), ``sshpass -p PASS``,
# ``docker login -p PASS``.
# The option is looked for at most 400 characters after the command: a bounded scan, so a
# long line full of "curl" stays linear.
_CMD_PASSWORD_RES: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (
        ("curl",),
        re.compile(
            r"\bcurl\b[^\n]{0,400}?[ \t](?:-[A-Za-z]*u|--user|--proxy-user)(?:[ \t]+|=)?"
            r"(?:\"[^\s:\"\[\]]*:(?P<pw1>[^\"\n]+)\"|'[^\s:'\[\]]*:(?P<pw2>[^'\n]+)'|[^\s:\"'\[\]]*:(?P<pw>[^\s\"']+))"
        ),
    ),
    (
        ("mysql", "mariadb"),
        re.compile(
            r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|mysqlsh|mariadb(?:-dump)?)\b"
            r"[^\n]{0,400}?[ \t]-p(?P<pw>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']+)"
        ),
    ),
    (
        ("sshpass",),
        re.compile(r"\bsshpass\b[^\n]{0,400}?[ \t]-p[ \t]*(?P<pw>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']+)"),
    ),
    (
        ("login",),
        re.compile(
            r"\b(?:docker|podman)\s+login\b[^\n]{0,400}?[ \t]-p[ \t]+(?P<pw>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']+)"
        ),
    ),
    (("machine",), re.compile(r"\bmachine[ \t]+\S+(?:\s+login[ \t]+\S+)?\s+password[ \t]+(?P<pw>\S+)")),
]


def _redact_cmd_password(m: re.Match[str]) -> str:
    group = next(g for g in ("pw", "pw1", "pw2") if g in m.re.groupindex and m.group(g) is not None)
    pw = m.group(group)
    inner = _quoted_inner(pw)
    bare = pw if inner is None else inner
    if not bare or _is_marker(bare) or _is_reference(bare):
        return m.group(0)
    start, end = m.span(group)
    base = m.start()
    whole = m.group(0)
    new = _mark("password") if inner is None else f"{pw[0]}{_mark('password')}{pw[0]}"
    return whole[: start - base] + new + whole[end - base :]


# -- tokens recognisable by their shape --

_JWT_RE = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*")


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


def _sk_check(token: str) -> bool:
    return _keylike(re.sub(r"^sk-(?:ant-|proj-|svcacct-|admin-|None-)?", "", token))


def _mixed_check(token: str) -> bool:
    """Letters-only vendor tokens (Hugging Face): random mixed case, not a snake_case name."""
    body = token.split("_", 1)[1]
    return _keylike(body) or _random_looking(body)


class _TokenRule:
    """A token shape. ``needles``: literal strings one of which the text must contain (or a
    cheap pattern it must match) for the pattern to be worth running: a plain substring search
    skips most rules on most texts."""

    __slots__ = ("_compiled", "check", "kind", "needles", "source")

    def __init__(
        self,
        kind: str,
        needles: tuple[str, ...] | re.Pattern[str],
        pattern: str,
        check: Callable[[str], bool] | None = None,
    ) -> None:
        self.kind = kind
        self.needles = needles
        self.source = pattern
        # Compiled when first needed: three dozen of them at import were a tenth of the app's
        # first frame, and most texts never reach most rules (the needles).
        self._compiled: re.Pattern[str] | None = None
        self.check = check

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source)
        return self._compiled

    def apply(self, text: str) -> str:
        if isinstance(self.needles, re.Pattern):
            if not self.needles.search(text):
                return text
        elif not any(n in text for n in self.needles):
            return text

        def repl(m: re.Match[str]) -> str:
            if self.check is not None and not self.check(m.group(0)):
                return m.group(0)
            return _mark(self.kind)

        return self.pattern.sub(repl, text)


_S = r"(?<![A-Za-z0-9_-])"  # a token starts after no token character
_E = r"(?![A-Za-z0-9_-])"  # ... and ends before none

_TOKEN_RULES: list[_TokenRule] = [
    _TokenRule("anthropic_key", ("sk-ant-",), rf"{_S}sk-ant-[A-Za-z0-9_-]{{20,}}", _sk_check),
    _TokenRule(
        "openai_key",
        ("sk-",),
        rf"{_S}sk-(?:proj-|svcacct-|admin-|None-|or-v1-)?[A-Za-z0-9_-]{{20,}}",
        _sk_check,
    ),
    _TokenRule("stripe_key", ("k_live_", "k_test_"), rf"{_S}(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{{10,}}"),
    _TokenRule("stripe_key", ("whsec_",), rf"{_S}whsec_[0-9A-Za-z+/=]{{24,}}"),
    _TokenRule(
        "aws_access_key",
        ("AKIA", "ASIA", "A3T", "ABIA", "ACCA"),
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])",
    ),
    _TokenRule(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    ),
    _TokenRule(
        "gitlab_token",
        (
            "glpat-",
            "gldt-",
            "glft-",
            "glsoat-",
            "glrt-",
            "glcbt-",
            "glimt-",
            "glptt-",
            "glagent-",
            "gloas-",
            "gltst-",
            "GR1348941",
        ),
        rf"{_S}(?:(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|glagent|gloas|gltst)-[A-Za-z0-9_-]{{20,}}"
        rf"|GR1348941[A-Za-z0-9_-]{{20,}}){_E}",
    ),
    _TokenRule(
        "grafana_token",
        ("glsa_", "glc_"),
        rf"{_S}(?:glsa_[A-Za-z0-9]{{32}}_[A-Fa-f0-9]{{8}}|glc_[A-Za-z0-9+/]{{32,}}={{0,2}})",
    ),
    _TokenRule("npm_token", ("npm_",), rf"{_S}npm_[A-Za-z0-9]{{36}}{_E}"),
    _TokenRule("huggingface_token", ("hf_",), rf"{_S}hf_[A-Za-z0-9]{{30,}}{_E}", _mixed_check),
    _TokenRule("pypi_token", ("pypi-AgE",), rf"{_S}pypi-AgE[A-Za-z0-9_-]{{50,}}"),
    _TokenRule("sendgrid_key", ("SG.",), rf"{_S}SG\.[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9_-]{{43}}{_E}"),
    _TokenRule(
        "slack_token",
        ("xox", "xapp-"),
        r"(?<![A-Za-z0-9_-])(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})",
    ),
    _TokenRule(
        "slack_webhook",
        ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{10,}",
    ),
    _TokenRule(
        "discord_webhook",
        ("/api/webhooks/",),
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}",
    ),
    _TokenRule("google_api_key", ("AIza",), rf"{_S}AIza[0-9A-Za-z_-]{{35}}{_E}"),
    _TokenRule("google_oauth_secret", ("GOCSPX-",), rf"{_S}GOCSPX-[A-Za-z0-9_-]{{28}}{_E}"),
    _TokenRule("twilio_key", ("SK",), r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])"),
    _TokenRule("mailchimp_key", ("-us",), r"(?<![A-Za-z0-9])[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])"),
    _TokenRule("square_token", ("sq0",), rf"{_S}sq0(?:csp|atp|idp)-[0-9A-Za-z_-]{{22,43}}{_E}"),
    _TokenRule("telegram_bot_token", (":A",), r"(?<![0-9])[0-9]{8,10}:A[A-Za-z0-9_-]{34}(?![A-Za-z0-9_-])"),
    _TokenRule(
        "discord_bot_token",
        re.compile(r"\.[A-Za-z0-9_-]{6}\."),
        r"(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])",
        lambda t: _keylike(t.replace(".", "")),
    ),
    _TokenRule("artifactory_token", ("AKCp",), rf"{_S}AKCp[A-Za-z0-9]{{64,}}{_E}"),
    _TokenRule("digitalocean_token", ("_v1_",), rf"{_S}do[opr]_v1_[a-f0-9]{{64}}{_E}"),
    _TokenRule("shopify_token", ("shp",), rf"{_S}shp(?:at|ss|ca|pa)_[a-fA-F0-9]{{32}}{_E}"),
    _TokenRule("atlassian_token", ("ATATT3",), rf"{_S}ATATT3[A-Za-z0-9_=-]{{30,}}"),
    _TokenRule("linear_key", ("lin_api_",), rf"{_S}lin_api_[A-Za-z0-9]{{40}}{_E}"),
    _TokenRule("doppler_token", ("dp.",), rf"{_S}dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{{40,}}{_E}"),
    _TokenRule("postman_key", ("PMAK-",), rf"{_S}PMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}{_E}"),
    _TokenRule("databricks_token", ("dapi",), rf"{_S}dapi[a-f0-9]{{32}}(?:-[0-9])?{_E}"),
    _TokenRule("age_secret_key", ("AGE-SECRET-KEY-1",), rf"{_S}AGE-SECRET-KEY-1[0-9A-Z]{{58}}{_E}"),
    _TokenRule("vault_token", ("hvs.", "hvb."), rf"{_S}hv[sb]\.[A-Za-z0-9_-]{{24,}}{_E}"),
    _TokenRule("pulumi_token", ("pul-",), rf"{_S}pul-[a-f0-9]{{40}}{_E}"),
    _TokenRule("sentry_token", ("sntry",), rf"{_S}sntry[su]_[A-Za-z0-9+/=_-]{{40,}}"),
    _TokenRule("groq_key", ("gsk_",), rf"{_S}gsk_[A-Za-z0-9]{{48,}}{_E}"),
    _TokenRule("xai_key", ("xai-",), rf"{_S}xai-[A-Za-z0-9]{{60,}}{_E}"),
    _TokenRule("replicate_token", ("r8_",), rf"{_S}r8_[A-Za-z0-9]{{37}}{_E}"),
]


# -- generic ``key = value`` --

# ``key: value`` / ``key = value`` / ``"key" => "value"`` / ``key := value``; the key is judged
# by ``_key_kind`` (its last word must name a secret), so ``password_field`` or ``max_tokens``
# are left alone.
_ASSIGN_RE = re.compile(
    r"(?i)(?<![A-Za-z0-9_.-])(?P<q>[\"']?)(?P<key>[A-Za-z_][A-Za-z0-9_.-]{0,80}+)"
    + _ENDS_IN_SECRET_WORD
    + r"(?P=q)(?P<sep>[ \t]*(?::=|=>|:(?!:)|=(?!=|>))[ \t]*)"
    rf"(?:(?P<quoted>{_QUOTED})|(?P<bare>[^\s\"'`,;&]+))"
)
# Cheap test before running _ASSIGN_RE: the lower-cased text names a secret somewhere.
_SECRET_WORD_RE = re.compile(r"pass|pwd|secret|token|key|auth|credential")
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_KEY_WORDS = (  # the last word ends with one of these (also glued: PGPASSWORD, apiToken)
    ("password", "password"),
    ("passwd", "password"),
    ("passphrase", "password"),
    ("secret", "secret"),
    ("token", "token"),
    ("credentials", "credentials"),
    ("credential", "credentials"),
    ("apikey", "api_key"),
)
# ``<word> key`` pairs that name a secret (``api_key``, ``AccountKey``, ``SharedAccessKey``).
_KEY_QUALIFIERS = frozenset(
    "api access secret private auth signing encryption master account shared client app sas license".split()
)


def _key_kind(key: str) -> str | None:
    """The redaction kind when ``key`` names a secret (judged by its last word), else None."""
    words = [w for w in re.split(r"[_.\-]+", _CAMEL_RE.sub("_", key).lower()) if w]
    if not words:
        return None
    last = words[-1]
    prev = words[-2] if len(words) > 1 else ""
    for word, kind in _KEY_WORDS:
        if last.endswith(word):
            return kind
    if last == "pass":  # DB_PASS; glued words (bypass, compass) never end here
        return "password"
    if last == "pwd":  # MYSQL_PWD, Pwd= in connection strings; bare PWD is checked by value
        return "password"
    if last == "key" and prev in _KEY_QUALIFIERS:
        return "api_key"
    if last == "base" and prev == "key" and "secret" in words:  # SECRET_KEY_BASE (Rails)
        return "secret"
    if last == "auth" and (len(words) > 1 or key.startswith("_")):  # _auth (.npmrc), NPM_AUTH
        return "credentials"
    return None


# Unquoted values that are code or types, not secrets: ``token: str``, ``password = None``.
_NOT_A_VALUE = frozenset(
    "none null nil true false yes no on off undefined str string int bool bytes any object number optional "
    "secretstr self cls required enabled disabled await new function lambda yield not async typeof value val".split()
)


# Names, not secrets: an environment variable's name (``ENV_KEY = "ANTHROPIC_API_KEY"``), a
# snake_case variable in code (``api_key=resolved_api_key``), a type (``auth: TokenAuth``).
_UPPER_SNAKE_RE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_SNAKE_NAME_RE = re.compile(r"_*[a-z][a-z0-9]*(?:_+[a-z0-9]+)+|_+[a-z][a-z0-9]*")
_CAMEL_TYPE_RE = re.compile(r"(?:[A-Z][a-z0-9]+){2,}")


def _names_the_key(value: str, key: str) -> bool:
    """``self.password = password``, ``final_token = token``, ``X = "refresh_token"``."""
    v = value.lower().replace("-", "_")
    k = _CAMEL_RE.sub("_", key).lower().replace("-", "_").replace(".", "_")
    return k == v or k.endswith("_" + v) or v.endswith("_" + k.rsplit("_", 1)[-1])


def _bare_is_secret(value: str, key: str, sep: str, rest_of_line: str) -> bool:
    if _is_marker(value) or _is_reference(value):
        return False
    if value.lower() in _NOT_A_VALUE or _names_the_key(value, key) or _UPPER_SNAKE_RE.fullmatch(value):
        return False
    # Code, not a literal: calls, indexing, attribute paths (``self._token``), annotations.
    if any(ch in value for ch in "()[]{}"):
        return False
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\.?", value):
        return False
    if re.fullmatch(r"-?\d{1,5}", value) and _key_kind(key) != "password":
        return False  # counts and limits (``max_token: 512``, ``token = -1``); a PIN is not one
    if len(value) < 4 and sep != "=":
        return False  # short names in code and prose (``user, password = un, pw``); not ``X=ab``
    code_assignment = "=" in sep and not _UPPER_SNAKE_RE.fullmatch(key)  # not an environment variable
    if code_assignment and (_SNAKE_NAME_RE.fullmatch(value) or re.fullmatch(r"[A-Z][a-z]+", value)):
        return False  # a variable or a class (``token = Name``)
    if _CAMEL_TYPE_RE.fullmatch(value) and not re.search(r"[0-9]", value):
        return False
    if key.lower() in ("pwd", "oldpwd") and value.startswith(("/", "~", ".")):
        return False  # the shell's working directory
    if key.lower() == "pass" and "=" not in sep:
        return False  # prose: "in one pass: log, pause, go on"
    # ``key: value`` is YAML-like or a header only when the value ends the line (or its quoted
    # string); in prose ("token: we use JWTs") it is not a value.
    rest = rest_of_line.lstrip()
    return not (
        ":" in sep and "=" not in sep and rest and not rest.startswith(("#", '"', "'", ")", "}", "]"))
    )


def _redact_assign(m: re.Match[str]) -> str:
    kind = _key_kind(m.group("key"))
    if kind is None:
        return m.group(0)
    head = m.group(0)[: m.start("sep") - m.start(0)] + m.group("sep")
    quoted = m.group("quoted")
    if quoted is not None:
        inner = quoted[1:-1]
        if not inner or _is_marker(inner) or _is_reference(inner) or _UPPER_SNAKE_RE.fullmatch(inner):
            return m.group(0)
        if _names_the_key(inner, m.group("key")) or re.search(r"\{[^{}]*\}|\[[^\]]*-[^\]]*\]", inner):
            return m.group(0)  # a name, a template (``f"{x}"``) or a pattern (``"[a-z]+"``)
        return f"{head}{quoted[0]}{_mark(kind)}{quoted[0]}"
    value = m.group("bare")
    line_end = m.string.find("\n", m.end())
    rest = m.string[m.end() : len(m.string) if line_end < 0 else line_end]
    if not _bare_is_secret(value, m.group("key"), m.group("sep"), rest):
        return m.group(0)
    return f"{head}{_mark(kind)}"


# -- the whole pass --

# Invisible characters inside an ASCII token only serve to hide it from these patterns
# ("sk-ant-api03-AbC\u200bdEf..."). Joiners between emoji or in scripts that need them are
# not between ASCII token characters and are left alone.
_HIDDEN_CHARS = (
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\U000e0000-\U000e007f]"
)
_HIDDEN_CHAR_RE = re.compile(_HIDDEN_CHARS)  # a cheap first look: most texts have none
_HIDDEN_SPLIT_RE = re.compile(rf"(?<=[A-Za-z0-9_+/=.:-]){_HIDDEN_CHARS}+(?=[A-Za-z0-9_+/=.:-])")


def _redact_visible(text: str) -> str:
    text = _redact_private_keys(text)
    text = redact_url_credentials(text)
    low = text.lower()
    if "authorization" in low:
        text = _AUTH_HEADER_RE.sub(_redact_auth_header, text)
    if "Bearer" in text:
        text = _BEARER_RE.sub(_redact_bearer, text)
    if "eyJ" in text:
        text = _JWT_RE.sub(_mark("jwt"), text)
    for rule in _TOKEN_RULES:
        text = rule.apply(text)
    names_secret = _SECRET_WORD_RE.search(low) is not None
    if names_secret and "-" in text:
        text = _FLAG_RE.sub(_redact_flag, text)
    for needles, pattern in _CMD_PASSWORD_RES:
        if any(n in low for n in needles):
            text = pattern.sub(_redact_cmd_password, text)
    if names_secret:
        text = _ASSIGN_RE.sub(_redact_assign, text)
    return text


def redact(text: str) -> str:
    """Replace secrets by ``[REDACTED:<kind>]``; idempotent, and ordinary prose/code is kept.

    Context patterns (PEM blocks, URLs, auth headers) run first so their kind wins; generic
    ``key = value`` runs last and leaves values that are already redacted alone. When invisible
    characters split an ASCII token, the text is also checked with them removed; if that finds
    a secret, that joined text (redacted) is the result.
    """
    if not text:
        return text
    joined = _HIDDEN_SPLIT_RE.sub("", text) if _HIDDEN_CHAR_RE.search(text) else text
    if joined != text:
        out = _redact_until_stable(joined)
        if out != joined:
            return out
    return _redact_until_stable(text)


def _redact_until_stable(text: str) -> str:
    """A redaction can expose another secret: a key glued to the end of a token has no
    boundary until that token becomes a marker. Repeat (rarely more than twice) until nothing
    changes, which is also what makes ``redact`` idempotent."""
    for _ in range(8):
        out = _redact_visible(text)
        if out == text:
            break
        text = out
    return text


# -- display -----------------------------------------------------------------------------

# Whole escape sequences, so no remnant such as "[31m" survives (ECMA-48, 7-bit and C1 forms):
# - CSI: ESC [ or 0x9B, parameter bytes, intermediate bytes, a final byte (cut-off: what is there);
# - control strings OSC/DCS/SOS/PM/APC (ESC ] P X ^ _ or 0x9D 0x90 0x98 0x9E 0x9F) up to BEL or
#   ST (ESC \ or 0x9C). One without a terminator ends at the end of its line: its payload (a
#   title, clipboard data, a link target) is never shown, and the next lines stay visible;
# - any other ESC with its intermediate and final bytes (ESC c, ESC ( B, ESC 7).
_TERMINAL_SEQ_RE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# Joiners that scripts and emoji sequences need; harmless on a terminal.
_DISPLAY_KEEP = frozenset("\u200c\u200d")


# Characters worth a closer look: all but printable ASCII, tab and newline.
_DISPLAY_CANDIDATE_RE = re.compile(r"[^\x20-\x7e\t\n]")


def strip_escape_sequences(text: str) -> str:
    """Whole terminal escape sequences removed, nothing else (see ``_TERMINAL_SEQ_RE``)."""
    return _TERMINAL_SEQ_RE.sub("", text)


def strip_terminal(text: str, *, keep_newlines: bool = True) -> str:
    """Text safe to show on a terminal: whole CSI/OSC/DCS/SOS/PM/APC sequences removed, then
    every other control, bidi or invisible character. Tabs are kept; line breaks (``\\r\\n``,
    ``\\r``, U+2028/2029 become ``\\n``) are kept, or each becomes a space with
    ``keep_newlines=False``. One function for print mode, the CLI and the app (model, tool and
    card text is hostile)."""
    if not text:
        return text
    text = strip_escape_sequences(text)
    newline = "\n" if keep_newlines else " "
    if "\r" in text:
        # A bare CR would let a later part overwrite an earlier one on screen: a line break.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not keep_newlines:
        text = text.replace("\n", " ")
    # One table built from the distinct suspicious characters: fast on large tool output.
    table: dict[int, str | None] = {}
    for c in set(_DISPLAY_CANDIDATE_RE.findall(text)):
        if c in "\u2028\u2029":
            table[ord(c)] = newline
        elif c not in _DISPLAY_KEEP and is_unsafe_char(c):
            table[ord(c)] = None
    return text.translate(table) if table else text


def strip_terminal_deep(value: object) -> object:
    """A JSON-like value (tool arguments) with terminal sequences removed from every string, keys included."""
    if isinstance(value, str):
        return strip_terminal(value)
    if isinstance(value, list):
        return [strip_terminal_deep(v) for v in value]
    if isinstance(value, dict):
        return {strip_terminal(str(k)): strip_terminal_deep(v) for k, v in value.items()}
    return value


_LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")


def line_count(text: str) -> int:
    """How many lines a file's text has, as an editor shows it: CR LF, LF and a lone CR each
    end a line; a line break at the very end starts no further line ("" has none). The one
    count for every place that says how long a text is (a write's dialog, its tool block)."""
    if not text:
        return 0
    breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
    return breaks + (0 if text[-1] in "\r\n" else 1)


def split_lines(text: str) -> list[str]:
    """The lines ``line_count`` counts, without their line breaks."""
    lines = _LINE_BREAK_RE.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


# The characters an escape sequence starts with (see ``_TERMINAL_SEQ_RE``).
_ESCAPE_STARTS = frozenset("\x1b\x9b\x90\x98\x9d\x9e\x9f")
# A sequence that may still be growing at the end of a chunk, by kind: what has to be kept of it
# for the next chunk to be read exactly as the whole text would be (its payload never is).
_CSI_OPENERS = ("\x1b[", "\x9b")
_STRING_OPENERS = ("\x1b]", "\x1bP", "\x1bX", "\x1b^", "\x1b_", "\x90", "\x98", "\x9d", "\x9e", "\x9f")


def _held_state(seq: str) -> str:
    """The shortest text that a following chunk continues exactly as it would continue ``seq``
    (one escape sequence that reaches the end of the text received so far): its opener, plus one
    intermediate byte when it has reached those; "" when ``seq`` cannot grow any more."""
    for opener in _CSI_OPENERS:
        if seq.startswith(opener):
            body = seq[len(opener) :]
            if body and "@" <= body[-1] <= "~":
                return ""  # the final byte arrived
            return opener + (" " if any(" " <= c <= "/" for c in body) else "")
    for opener in _STRING_OPENERS:
        if seq.startswith(opener):
            if seq.endswith(("\x07", "\x9c", "\x1b\\")) and len(seq) > len(opener):
                return ""  # terminated
            return opener  # the payload seen so far is dropped: the whole of it never shows
    body = seq[1:]
    if body and "0" <= body[-1] <= "~":
        return ""
    return "\x1b" + (" " if body else "")


class TerminalStreamStripper:
    """``strip_terminal`` over a text that arrives in chunks (a streamed answer).

    Stripping each chunk alone leaves the tail of a sequence cut between two chunks on screen
    (``]52;c;…``, ``5mblink``). ``feed`` returns what can be shown now and holds back the start
    of a sequence still open at the chunk's end (CSI up to its final byte; OSC/DCS/SOS/PM/APC up
    to BEL or ST; their 8-bit C1 forms; a lone ESC) and a trailing CR (half of a CR LF);
    ``flush`` ends the stream. The concatenated output over any split of a text equals
    ``strip_terminal`` of the whole text. What is held is bounded: at most an opener and one
    intermediate byte — a control string's payload is dropped as it arrives, however long it
    runs unterminated — and one CR.
    """

    def __init__(self, *, keep_newlines: bool = True) -> None:
        self.keep_newlines = keep_newlines
        self._held = ""  # the state of an escape sequence open at the end of the last chunk
        self._cr = False  # the text so far ended with CR: the next character decides what it is

    @property
    def holding(self) -> bool:
        """Whether anything is held back (an open sequence or a trailing CR)."""
        return bool(self._held) or self._cr

    def feed(self, chunk: str) -> str:
        """The part of ``chunk`` (with what was held) that can be shown now, stripped."""
        if not chunk:
            return ""
        text = self._held + chunk
        self._held = ""
        cut = len(text)
        if any(c in text for c in _ESCAPE_STARTS):
            last = None
            for m in _TERMINAL_SEQ_RE.finditer(text):
                last = m
            if last is not None and last.end() == len(text):
                # It might go on in the next chunk: only its state is kept.
                cut = last.start()
                self._held = _held_state(text[cut:])
        return self._emit(strip_escape_sequences(text[:cut]), final=False)

    def flush(self) -> str:
        """The end of the stream: what was held, stripped (an open sequence shows nothing)."""
        self._held = ""
        return self._emit("", final=True)

    def _emit(self, text: str, *, final: bool) -> str:
        if self._cr:
            text = "\r" + text
            self._cr = False
        if not final and text.endswith("\r"):
            text = text[:-1]
            self._cr = True
        return strip_terminal(text, keep_newlines=self.keep_newlines)


def quote(value: object, limit: int = 60) -> str:
    """A value for a rejection or conflict reason: redacted, stripped of control characters,
    shortened, then quoted. Reasons reach stderr, the history and the job, so they never carry
    a raw secret or escape sequence."""
    text = strip_terminal(redact(str(value)), keep_newlines=False)
    if len(text) > limit:
        text = text[: max(limit - 1, 1)] + "…"
    return repr(text)


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
        return f"filename {quote(name)} contains a path separator"
    if name in (".", "..") or ".." in name:
        return f"filename {quote(name)} contains '..'"
    if any(is_unsafe_char(c) for c in name):
        return f"filename {quote(name)} contains control, bidi or invisible characters"
    if name != name.strip():
        return f"filename {quote(name)} has leading or trailing whitespace"
    if name.startswith("."):
        return f"filename {quote(name)} starts with a dot"
    if name.startswith("-"):
        return f"filename {quote(name)} starts with '-'"
    if unicodedata.normalize("NFKC", name).casefold() == INDEX_FILE.casefold():
        return f"{INDEX_FILE} is the index, not a note"
    if not name.endswith(".md"):
        return f"filename {quote(name)} does not end in .md"
    return None


def _slug_of(text: str) -> str:
    # Sequences go whole before anything else (no "31m" in a name); a secret never becomes a name.
    text = redact(strip_escape_sequences(text))
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

"""Redaction: secrets in any text replaced by ``[REDACTED:<kind>]`` before it is stored or sent.

Everything a model or a cloned repository writes passes through ``redact`` before it reaches a
store, the index or a prompt. Idempotent, and ordinary prose and code are kept. Tokens known by
their shape are in memory/text/tokens.py; the context rules (private keys, URL credentials,
headers, command lines, ``key = value``, prose like "my password is hunter2") and the whole pass
are here.
"""

from __future__ import annotations

import bisect
import re

from memory.text.tokens import JWT_RE, TOKEN_RULES, is_marker, mark, random_looking

__all__ = ["redact", "redact_url_credentials"]

# The token shapes follow detect-secrets' plugins (Yelp/detect-secrets 1.5: aws, github,
# gitlab, stripe, npm, sendgrid, slack, twilio, mailchimp, square, pypi, telegram, discord,
# artifactory, azure, jwt, private keys, basic auth, keyword) plus current vendors it lacks.
# The package itself is not used: it scans line by line for files (about 1.3 s per MiB with
# its regex plugins alone), returns values rather than spans, keeps global settings, pulls in
# requests, its entropy plugins flag commit hashes and UUIDs, and it misses command-line forms
# (`--password x`, `mysql -pPASS`, `curl -u user:pass`) and zero-width-split keys.


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
    r"Private-Lines:[ \t]*\d+[ \t]*\r?\n(?:[ \t]*[A-Za-z0-9+/]+={0,2}[ \t]*(?:\r?\n|$))*"
    r"(?:Private-(?:MAC|Hash):[^\n]*)?"
)


def _redact_private_keys(text: str) -> str:
    """Each BEGIN ... END block (the first END after it) or, without an END, the BEGIN line and
    the key material after it. END positions are found once: no rescan per BEGIN."""
    if "Private-Lines:" in text:
        text = _PUTTY_RE.sub(mark("private_key"), text)
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
        stop = end_ends[j] if j < len(end_starts) else _PEM_TAIL_RE.match(text, m.end()).end()  # type: ignore[union-attr]  # a starred group: matches everywhere
        out.append(text[pos : m.start()])
        out.append(mark("private_key"))
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
    # Even ``user:pass@`` is redacted: it may be the real one (people paste exactly that).
    if is_marker(password) or _is_reference(password):
        return m.group(0)
    return f"{scheme}{user}:{mark('url_password')}{rest[at:]}"


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
    if is_marker(value) or _is_reference(value) or not _tokenish(value, scheme):
        return m.group(0)
    kind = "bearer" if scheme is None or scheme.lower() == "bearer" else "authorization"
    return f"{head}{scheme + ' ' if scheme else ''}{mark(kind)}"


def _redact_bearer(m: re.Match[str]) -> str:
    if is_marker(m.group(2)) or not random_looking(m.group(2)):
        return m.group(0)  # "Bearer authentication" is prose
    return f"{m.group(1)}{mark('bearer')}"


# Option values: ``--password x``, ``--db-password=x``, ``-Djavax.net.ssl.keyStorePassword=x``.
_QUOTED = r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'"
# A name (matched possessively) must end in a word that may name a secret: a match that is not
# one would swallow text (``https://...?token=x``, ``--verbose --password x``) unexamined.
_ENDS_IN_SECRET_WORD = (
    "(?:"
    + "|".join(
        f"(?<={w})"
        for w in (
            "password passwd passphrase pass pwd secret token key base auth credential credentials"
        ).split()
    )
    + ")"
)
_FLAG_RE = re.compile(
    r"(?i)(?<![A-Za-z0-9_-])(?P<flag>--?[A-Za-z][A-Za-z0-9._-]{0,80}+)"
    rf"{_ENDS_IN_SECRET_WORD}(?P<sep>=|[ \t]+)"
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
    if kind is None or is_marker(value):
        return m.group(0)
    if inner is not None:
        if not inner or _is_reference(inner):
            return m.group(0)
        return f"{flag}{m.group('sep')}{value[0]}{mark(kind)}{value[0]}"
    if _is_reference(value) or value.lower() in _NOT_A_VALUE:
        return m.group(0)
    if m.group("sep") != "=" and (value.startswith("-") or value.lower() in _PROSE_AFTER_FLAG):
        return m.group(0)
    if name.lower() == "pwd" and value.startswith(("/", "~", ".")):
        return m.group(0)
    return f"{flag}{m.group('sep')}{mark(kind)}"


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
    if not bare or is_marker(bare) or _is_reference(bare):
        return m.group(0)
    start, end = m.span(group)
    base = m.start()
    whole = m.group(0)
    new = mark("password") if inner is None else f"{pw[0]}{mark('password')}{pw[0]}"
    return whole[: start - base] + new + whole[end - base :]


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
    "none null nil true false yes no on off undefined str string int bool bytes any object number "
    "optional secretstr self cls required enabled disabled await new function lambda yield not async "
    "typeof value val".split()
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
    if is_marker(value) or _is_reference(value):
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
        if not inner or is_marker(inner) or _is_reference(inner) or _UPPER_SNAKE_RE.fullmatch(inner):
            return m.group(0)
        if _names_the_key(inner, m.group("key")) or re.search(r"\{[^{}]*\}|\[[^\]]*-[^\]]*\]", inner):
            return m.group(0)  # a name, a template (``f"{x}"``) or a pattern (``"[a-z]+"``)
        return f"{head}{quoted[0]}{mark(kind)}{quoted[0]}"
    value = m.group("bare")
    line_end = m.string.find("\n", m.end())
    rest = m.string[m.end() : len(m.string) if line_end < 0 else line_end]
    if not _bare_is_secret(value, m.group("key"), m.group("sep"), rest):
        return m.group(0)
    return f"{head}{mark(kind)}"


# -- prose: "my password is hunter2", "the token: abc123" --

# A keyword that names a secret, then "is"/"was" (a colon may follow), ": " or "=", then one word,
# bare or quoted. Whether that word is a secret is judged by ``_prose_secret``: prose about
# code says "the token is refreshed every hour", and that must stay as it is.
_PROSE_RE = re.compile(
    r"(?i)(?<![A-Za-z0-9_.$@/\\-])"
    r"(?P<key>pass(?:word|wd|phrase)|pwd|secret|token|api[ _-]?key|(?:secret|access|private)[ _-]key)"
    r"(?P<sep>[ \t]+(?:is|was)(?:[ \t]*:)?[ \t]+|[ \t]*:[ \t]+|[ \t]*=(?![=>~])[ \t]*)"
    r"(?:(?P<q>[\"'`])(?P<inner>[^\s\"'`]{1,200})(?P=q)|(?P<bare>[^\s\"'`,;()\[\]{}<>]{1,200}+)(?![(\[{]))"
)
# Words a prose value often is, none a secret (the value judged is one word).
_PROSE_WORDS = frozenset(
    "a an the this that these those it its my your our their his her one some any each every no none "
    "here there now then also still only just never always already too very so as at by for from in into "
    "of on onto to with without within via and or but if when where which who what why how because "
    "is are was were be been being has have had do does did can could will would shall should may might "
    "must used using use set unset same different wrong right correct incorrect invalid valid expired "
    "missing optional needed necessary mandatory stored saved kept sent read written generated created "
    "rotated refreshed revoked encrypted hashed salted masked hidden secret private public secure insecure "
    "unsafe safe weak strong short long good bad fine ok okay current default temporary permanent static "
    "random unique shared global local available unknown known visible sensitive empty blank given "
    "passed ignored plaintext cleartext lowercase uppercase readonly writable something anything nothing "
    "everything somewhere elsewhere anywhere nowhere whatever otherwise together different important "
    "obsolete deprecated disabled enabled".split()
)
# A lower-case word of 8+ letters is a secret only when it is not shaped like an English word
# ("required", "refreshed", "rotating", "sensitive", "mandatory", "internal", "elsewhere").
_ENGLISH_SUFFIX_RE = re.compile(
    r"(?:ed|ing|ings|able|ible|ive|ous|ful|less|al|ary|ory|ent|ant|ence|ance|tion|tions|sion|ment|ness"
    r"|ity|ies|ly|ure|ate|ect|ic|ics|ise|ize|ere|ism|ist|ship|ward|wards|wise)$"
)
# Digits that are not a secret: versions, sizes and durations, algorithm and encoding names.
_NOT_SECRET_DIGITS_RE = re.compile(
    r"v?\d+(?:\.\d+)+|v\d+|\d+(?:ms|s|m|h|d|w|min|mins|sec|secs|hours?|days?|bytes?|b|kb|mb|gb|k|chars?|bits?)"
    r"|(?:[a-z]+\d+|\d+)-[a-z]+"
    r"|sha\d+|md\d|base\d+(?:url)?|utf-?\d+|ucs-?\d|hs\d+|rs\d+|es\d+|ps\d+|aes-?\d*|rsa-?\d*|ed\d+|x\d+"
    r"|oauth\d|ipv\d|https?\d|tls\d*|ssl\d*|pbkdf\d|argon\d\w*|pkcs\d+|uuid\d|u?int\d+|float\d+|k8s|s3|ec2|2fa",
    re.IGNORECASE,
)
_PROSE_SYMBOLS = frozenset("!@#$%^&*+=~|\\?")
_CLAUSE_GOES_ON_RE = re.compile(r"[ \t]+(?!(?:and|or|but|so|then)\b)[A-Za-z0-9]")


def _case_flips(word: str) -> int:
    """Single-letter runs of one case ("hUnTeR": 6; "McDonald": 3; "PostgreSQL": 1)."""
    runs = re.findall(r"[a-z]+|[A-Z]+", word)
    return sum(1 for r in runs if len(r) == 1) if len(runs) > 2 else 0


def _prose_secret(word: str, key: str, quote_char: str | None, sep: str, goes_on: bool) -> bool:
    """Whether ``word``, the value after ``key`` in prose, is a secret. The rule (README's
    redaction paragraph): one word that is not a placeholder, a path, a URL, a name in code or a
    common word, and that has a digit (a letter too, or 4+ digits for a password; not a version,
    a size or an algorithm's name), a symbol inside it, many case flips, or is quoted, or is a
    lower-case word of 8+ letters ending its clause (``goes_on``: a word follows, not "and"/"or"…)
    that is not shaped like an English word."""
    if is_marker(word) or _is_reference(word) or "://" in word or word.startswith(("/", "~", "./", "../")):
        return False
    low = word.lower()
    if (
        low in _NOT_A_VALUE
        or low in _PROSE_WORDS
        or _UPPER_SNAKE_RE.fullmatch(word)
        or _names_the_key(word, key)
    ):
        return False
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+", word):
        return False  # an attribute path or a file name (``config.token``, ``secrets.yaml``)
    code = quote_char == "`" or not sep.strip(" \t").lower().startswith(("is", "was"))
    if code and (
        _SNAKE_NAME_RE.fullmatch(word) or (_CAMEL_TYPE_RE.fullmatch(word) and not re.search(r"\d", word))
    ):
        return False  # a variable or a type in code (``token = new_token``)
    if any(ch.isdigit() for ch in word):
        if _NOT_SECRET_DIGITS_RE.fullmatch(word):
            return False
        if word.isdigit():
            return len(word) >= 4 and _key_kind(key.replace(" ", "_")) == "password"
        return len(word) >= 4 and any(ch.isalpha() for ch in word)
    if any(ch in _PROSE_SYMBOLS for ch in word[1:]):
        return True
    if random_looking(word) or _case_flips(word) >= 4:
        return True
    if quote_char is not None:
        return len(word) >= 3
    return (
        re.fullmatch(r"[a-z]{8,}", word) is not None and not _ENGLISH_SUFFIX_RE.search(word) and not goes_on
    )


def _redact_prose(m: re.Match[str]) -> str:
    key, sep = m.group("key"), m.group("sep")
    kind = _key_kind(re.sub(r"[ -]", "_", key)) or "secret"
    head = f"{key}{sep}"
    inner = m.group("inner")
    if inner is not None:
        q = m.group("q")
        return f"{head}{q}{mark(kind)}{q}" if _prose_secret(inner, key, q, sep, False) else m.group(0)
    bare = m.group("bare")
    word = bare.rstrip(".,;:!?")  # closing punctuation stays
    if not word:
        return m.group(0)
    tail = bare[len(word) :]
    # Matched in place, never on a slice of the rest: a text of many matches stays linear.
    goes_on = not tail and _CLAUSE_GOES_ON_RE.match(m.string, m.end()) is not None
    if not _prose_secret(word, key, None, sep, goes_on):
        return m.group(0)
    return f"{head}{mark(kind)}{tail}"


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
        text = JWT_RE.sub(mark("jwt"), text)
    for rule in TOKEN_RULES:
        text = rule.apply(text)
    names_secret = _SECRET_WORD_RE.search(low) is not None
    if names_secret and "-" in text:
        text = _FLAG_RE.sub(_redact_flag, text)
    for needles, pattern in _CMD_PASSWORD_RES:
        if any(n in low for n in needles):
            text = pattern.sub(_redact_cmd_password, text)
    if names_secret:
        text = _ASSIGN_RE.sub(_redact_assign, text)
        text = _PROSE_RE.sub(_redact_prose, text)
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

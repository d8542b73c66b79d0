"""Secrets written as prose ("my password is hunter2", "the token: abc123") are redacted, the
keyword kept; ordinary prose about code ("the token is refreshed every hour") is not.

The rule (README, redaction): after password/passwd/pwd/passphrase/secret/token/api key/apikey
and "is"/"was"/": "/"=", one word is a secret when it is not a placeholder, a path, a URL, a name
in code or a common word, and it has a digit (and a letter, or 4+ digits for a password; not a
version, size or algorithm name), a symbol inside it, many case flips, or it is quoted, or it is
a lower-case word of 8+ letters that ends its clause and is not shaped like an English word.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.extract.prompt import build_extraction_request
from memory.model import Turn, TurnMessage
from memory.text.redact import redact
from tests.support.memtools import create, make_env

P, T, S, K = "[REDACTED:password]", "[REDACTED:token]", "[REDACTED:secret]", "[REDACTED:api_key]"

POSITIVE: list[tuple[str, str]] = [
    ("password is hunter2", f"password is {P}"),
    ("my password is hunter2", f"my password is {P}"),
    ("The summary: the admin Password is hunter2.", f"The summary: the admin Password is {P}."),
    ("the token: abc123 for staging", f"the token: {T} for staging"),
    ("the token: abc123", f"the token: {T}"),
    ("API key is Zx81kq7", f"API key is {K}"),
    ("the api-key = Zx81kq7 here", f"the api-key = {K} here"),
    ("my apikey: q9w8e7r6", f"my apikey: {K}"),
    ("the passphrase is 'swordfish'", f"the passphrase is '{P}'"),
    ('my passwd is "letmein"', f'my passwd is "{P}"'),
    ("the secret is `hunter2`", f"the secret is `{S}`"),
    ("My password is swordfish", f"My password is {P}"),
    ("my password is swordfish, don't share it", f"my password is {P}, don't share it"),
    ("the password is swordfish and the user is bob", f"the password is {P} and the user is bob"),
    ("the password is p@ssw0rd!", f"the password is {P}!"),
    ("the password is pa$$word", f"the password is {P}"),
    ("the PIN password is 482913", f"the PIN password is {P}"),
    ("the token was hUnTeRtWo until today", f"the token was {T} until today"),
    ("pwd is 2bOrNot2b", f"pwd is {P}"),
    ("the secret is: Qm9vdHMy", f"the secret is: {S}"),
    ("passphrase: correct-horse-battery-9", f"passphrase: {P}"),
    ("TOKEN IS X7GH2KQ", f"TOKEN IS {T}"),
    (
        "first the password is hunter2\nthen the token is abc123",
        f"first the password is {P}\nthen the token is {T}",
    ),
]

NEGATIVE: list[str] = [
    "the token is refreshed every hour",
    "password is required",
    "secret is stored in Vault",
    "token is None",
    "The password is stored in the vault.",
    "the token is a JWT",
    "the token is 512 characters long",
    "the password is 8 characters long",
    "token is v2 of the format",
    "the token is sha256 of the body",
    "the secret is base64-encoded",
    "the password is incorrect",
    "the password is case-sensitive",
    "the token is short-lived",
    "The password was changed yesterday",
    "the api key is read from ANTHROPIC_API_KEY",
    "the secret key is stored in ~/.ssh",
    "the token is `config.token`",
    "the token is in secrets.yaml",
    "the token: we use JWTs for auth",
    "the password is hashed with bcrypt",
    "the token is expired",
    "the token is validated on every request",
    "the token is optional",
    "PWD is /home/bob/project",
    "the token is https://example.com/callback",
    "the secret is $CLIENT_SECRET",
    "the password is <your password>",
    "the password is ****",
    "token = next(tokens)",
    "if token == expected: pass",
    "self.token = token",
    "token: str | None = None",
    "def login(token: Token) -> None:",
    "password = getpass.getpass()",
    "the token is McDonald",
    "the api key is JavaScript-only",
    "the secret is 3600 seconds old",
    "the token is utf8",
    "the password is elsewhere",
    "the token is generated and stored",
    "the password is somewhere safe",
    "the token is ephemeral",
    "my password is too short",
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE)
def test_prose_secrets_are_redacted_keeping_the_keyword(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected


@pytest.mark.parametrize("text", NEGATIVE)
def test_prose_about_code_is_unchanged(text: str) -> None:
    assert redact(text) == text


# -- properties ------------------------------------------------------------------------------

_LEADS = ["password is ", "my password is ", "The token: ", "the api key = ", "secret was ", "Passphrase is "]
# A secret-looking word: letters and digits, both present.
_SECRETS = st.text(alphabet=string.ascii_letters + string.digits, min_size=5, max_size=40).filter(
    lambda w: any(c.isdigit() for c in w) and sum(c.isalpha() for c in w) >= 2 and not w[0].isdigit()
)


@given(
    st.sampled_from(_LEADS), _SECRETS, st.sampled_from(["", ".", " for staging", ", keep it", "\nnext line"])
)
def test_any_secret_looking_word_after_a_keyword_is_redacted(lead: str, secret: str, after: str) -> None:
    text = f"I noted that {lead}{secret}{after}"
    out = redact(text)
    assert secret not in out
    assert out.startswith(f"I noted that {lead}[REDACTED:")
    # A value ending its line is the ``key: value`` rule's, which takes a final "." with it.
    assert out.endswith(f"]{after}") or (after == "." and out.endswith("]"))
    assert redact(out) == out


_ORDINARY = st.sampled_from(
    "refreshed required stored rotated expired missing optional valid invalid hashed encrypted none null "
    "generated validated revoked temporary mandatory sensitive internal elsewhere cached reused a the "
    "read sent kept used set empty".split()
)


@given(
    st.sampled_from(["password", "token", "secret", "api key", "passphrase"]),
    st.sampled_from([" is ", " was "]),
    _ORDINARY,
    st.sampled_from(["", ".", " every hour", " in Vault", " by the server"]),
)
def test_ordinary_words_after_a_keyword_are_kept(key: str, sep: str, word: str, after: str) -> None:
    text = f"The {key}{sep}{word}{after}"
    assert redact(text) == text


_FRAGMENTS = [
    "password",
    " is ",
    "token",
    ": ",
    " = ",
    "hunter2",
    "swordfish",
    "'",
    "`",
    '"',
    ".",
    ",",
    " ",
    "\n",
    "refreshed",
    "None",
    "my ",
    "api key",
    "[REDACTED:",
    "]",
    "abc123",
    "!",
    "is",
]


@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=30))
def test_redact_of_prose_fragments_is_idempotent(parts: list[str]) -> None:
    once = redact("".join(parts))
    assert redact(once) == once


def test_many_prose_matches_stay_fast() -> None:
    import time

    text = "the token is x and my password is y " * 40_000
    start = time.monotonic()
    assert redact(text) == text
    assert time.monotonic() - start < 10


# -- what already uses redact gets it ------------------------------------------------------------


def test_a_model_written_card_summary_and_body_keep_no_prose_password(tmp_path) -> None:  # type: ignore[no-untyped-def]
    stores = make_env(tmp_path)
    op = create(
        "user",
        "Admin login",
        content="The admin password is hunter2, the token: abc123 for staging.\n",
        summary="password is hunter2",
    )
    res = stores.apply([(0, op)], source="job-1")
    (applied,) = res.applied
    text = (stores.user.dir / applied.filename).read_text()
    assert "hunter2" not in text and "abc123" not in text
    assert "summary: password is [REDACTED:password]" in text
    assert "The admin password is [REDACTED:password], the token: [REDACTED:token] for staging." in text


def test_the_extraction_request_carries_no_prose_password() -> None:
    turn = Turn(
        messages=[
            TurnMessage(role="user", text="remember: my password is hunter2"),
            TurnMessage(role="assistant", text="Noted; the api key is Zx81kq7."),
        ]
    )
    req = build_extraction_request([turn], "", "")
    assert "hunter2" not in req.prompt and "Zx81kq7" not in req.prompt
    assert "my password is [REDACTED:password]" in req.prompt

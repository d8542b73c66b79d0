"""memory.text (names, redact, terminal): one-line text, redaction, filenames, slugs, terminal display."""

from __future__ import annotations

import hashlib
import itertools
import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.constants import MAX_SLUG, MAX_SUMMARY, MAX_TITLE, NoteType
from memory.text.names import (
    check_filename,
    defuse_tags,
    note_filename,
    quote,
    sanitize_line,
    sanitize_summary,
    sanitize_title,
    slugify,
)
from memory.text.redact import redact
from memory.text.terminal import (
    TerminalStreamStripper,
    is_strict_utf8,
    is_unsafe_char,
    line_count,
    split_lines,
    strip_terminal,
)

BIDI = [
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u200e",
    "\u200f",
    "\u061c",
]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]
CONTROLS = ["\x00", "\x01", "\x07", "\x08", "\x1b", "\x7f", "\x9b"]

# -- sanitize_line -----------------------------------------------------------------------


def test_newlines_and_tabs_become_one_space() -> None:
    assert sanitize_line("a\nb\r\nc\td\u2028e\u2029f", 100) == "a b c d e f"


def test_whitespace_runs_collapse_and_ends_are_trimmed() -> None:
    assert sanitize_line("  a  \t\n  b   ", 100) == "a b"


@pytest.mark.parametrize("c", [c for c in CONTROLS if c not in "\x1b\x9b"])
def test_control_characters_removed(c: str) -> None:
    assert sanitize_line(f"ab{c}cd", 100) == "abcd"


@pytest.mark.parametrize("c", ["\x1b", "\x9b"])
def test_escape_introducer_takes_its_whole_sequence_with_it(c: str) -> None:
    # ESC c (reset) and CSI c (device attributes) are whole sequences: the "c" goes too, as on
    # a terminal, so nothing of a sequence is left as text.
    assert sanitize_line(f"ab{c}cd", 100) == "abd"


@pytest.mark.parametrize("c", BIDI)
def test_bidi_controls_removed(c: str) -> None:
    assert sanitize_line(f"ab{c}cd", 100) == "abcd"


@pytest.mark.parametrize("c", ZERO_WIDTH)
def test_zero_width_removed(c: str) -> None:
    assert sanitize_line(f"ab{c}cd", 100) == "abcd"


def test_lone_surrogates_removed() -> None:
    out = sanitize_line("a\ud800b\udfffc", 100)
    assert out == "abc"
    assert is_strict_utf8(out)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("# Title", "Title"),
        ("### Title", "Title"),
        ("  ## Title", "Title"),
        ("# # Title", "Title"),
        ("\n# x", "x"),
    ],
)
def test_leading_hashes_stripped(raw: str, expected: str) -> None:
    assert sanitize_line(raw, 100) == expected


def test_inner_hash_kept() -> None:
    assert sanitize_line("C# tips #1", 100) == "C# tips #1"


def test_only_hashes_gives_empty() -> None:
    assert sanitize_line("### \n #", 100) == ""


def test_cut_at_whole_code_points_and_adds_nothing() -> None:
    assert sanitize_line("😀" * 10, 3) == "😀😀😀"
    assert sanitize_line("构建流程说明", 4) == "构建流程"
    assert sanitize_line("abcdef", 3) == "abc"


def test_cut_does_not_leave_trailing_space() -> None:
    assert sanitize_line("ab cd", 3) == "ab"


def test_title_and_summary_limits() -> None:
    assert len(sanitize_title("x" * 500)) == MAX_TITLE
    assert len(sanitize_summary("x" * 500)) == MAX_SUMMARY
    assert sanitize_title("# Build\nworkflow") == "Build workflow"


@given(st.text(), st.integers(min_value=0, max_value=300))
def test_sanitize_line_properties(s: str, n: int) -> None:
    out = sanitize_line(s, n)
    assert len(out) <= n
    assert "\n" not in out and "\t" not in out and "  " not in out
    assert not any(is_unsafe_char(c) for c in out)
    assert not out.startswith(("#", " ")) and not out.endswith(" ")
    assert is_strict_utf8(out)
    assert sanitize_line(out, n) == out


def test_is_strict_utf8() -> None:
    assert is_strict_utf8("plain 中文 😀")
    assert not is_strict_utf8("bad \ud800")
    assert not is_strict_utf8("\udc80")


# -- redact ------------------------------------------------------------------------------

ANTHROPIC = (
    "sk-ant-api03-"
    + "Xy7Kq2Lm9Np4Rs6Tu8Vw1Xz3Ab5Cd7Ef9Gh1Ij3Kl5Mn7Op9Qr1St3Uv5Wx7Yz9aB2cD4eF6gH8iJ0kL2mN4oP6qR8sT0u"
    + "-AA"
)
OPENAI_LEGACY = "sk-" + "T3BlbkFJ4x9QmZ2vR7kLp1sN8wY5cH3jD6fG0aE2bU"
OPENAI_PROJ = "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12Wx34_yz-56AbCdEf"
DEEPSEEK_HEX = "sk-" + "4f3a9c0d2b7e4a1f8c6d5e3b2a1f0e9d"
AWS = "AKIAIOSFODNN7EXAMPLE"
AWS_TEMP = "ASIAJEXAMPLEXEG2JICEA"[:20]
GITHUB = {
    "ghp": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "gho": "gho_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "ghu": "ghu_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "ghs": "ghs_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "ghr": "ghr_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "pat": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV0123456",
}
SLACK = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6Ny2e8Nq5pJ0r5uUqvYwXq3Fz\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n"
    "c2gtZWQyNTUxOQ==\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "kind", "secret"),
    [
        (f"key: {ANTHROPIC} ok", "anthropic_key", ANTHROPIC),
        (f"use {OPENAI_LEGACY} now", "openai_key", OPENAI_LEGACY),
        (f"use {OPENAI_PROJ} now", "openai_key", OPENAI_PROJ),
        (f"use {DEEPSEEK_HEX} now", "openai_key", DEEPSEEK_HEX),
        (f"id {AWS} here", "aws_access_key", AWS),
        (f"id {AWS_TEMP} here", "aws_access_key", AWS_TEMP),
        *[(f"tok {v} end", "github_token", v) for v in GITHUB.values()],
        (f"slack {SLACK} end", "slack_token", SLACK),
        (f"maps {GOOGLE} end", "google_api_key", GOOGLE),
        (f"jwt {JWT} end", "jwt", JWT),
        (f"before\n{PEM}\nafter", "private_key", PEM),
    ],
)
def test_redacts_each_kind(text: str, kind: str, secret: str) -> None:
    out = redact(text)
    assert f"[REDACTED:{kind}]" in out
    assert secret not in out
    # The text around the secret survives.
    assert out.split(f"[REDACTED:{kind}]")[0] == text.split(secret)[0]
    assert out.split(f"[REDACTED:{kind}]")[1] == text.split(secret)[1]


@pytest.mark.parametrize(
    "label",
    [
        "OPENSSH PRIVATE KEY",
        "PRIVATE KEY",
        "EC PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ],
)
def test_private_key_block_labels(label: str) -> None:
    body = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkwYWJjZGVm\nZ2hpamtsbW5vcHFyc3R1dnd4eXo=\n"
    text = f"x\n-----BEGIN {label}-----\n{body}-----END {label}-----\ny"
    assert redact(text) == "x\n[REDACTED:private_key]\ny"


def test_private_key_without_end_line_redacts_key_material_only() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmU=\n\nThen run make"
    assert redact(text) == "[REDACTED:private_key]\n\nThen run make"


def test_private_key_flattened_to_one_line() -> None:
    one_line = sanitize_line(PEM, 10_000)
    assert redact(f"t {one_line} u") == "t [REDACTED:private_key] u"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "postgres://admin:s3cr3t@db.local:5432/app",
            "postgres://admin:[REDACTED:url_password]@db.local:5432/app",
        ),
        ("redis://:hunter2@cache:6379", "redis://:[REDACTED:url_password]@cache:6379"),
        ("https://bob:p@ss@example.com/x", "https://bob:[REDACTED:url_password]@example.com/x"),
        (
            "git clone https://user:tok3n@github.com/o/r.git",
            "git clone https://user:[REDACTED:url_password]@github.com/o/r.git",
        ),
    ],
)
def test_url_password_keeps_user_and_host(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "http://localhost:8080/path",
        "https://user@example.com/x",
        "see https://example.com:443/a:b",
        "mailto:a@b.c",
    ],
)
def test_urls_without_password_untouched(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc123def456ghi789", "Authorization: Bearer [REDACTED:bearer]"),
        (
            "curl -H 'authorization: bearer abc123def456ghi789' x",
            "curl -H 'authorization: bearer [REDACTED:bearer]' x",
        ),
        (
            'headers = {"Authorization": "Bearer abc123def456ghi789"}',
            'headers = {"Authorization": "Bearer [REDACTED:bearer]"}',
        ),
        ("send Bearer abc123def456ghi789jkl to it", "send Bearer [REDACTED:bearer] to it"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED:authorization]"),
    ],
)
def test_bearer_and_authorization(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2", "password=[REDACTED:password]"),
        ("DB_PASSWORD=s3cr3t!", "DB_PASSWORD=[REDACTED:password]"),
        ("api_key: abc123xyz", "api_key: [REDACTED:api_key]"),
        ('secret = "shh, it is"', 'secret = "[REDACTED:secret]"'),
        ("token=abcdef", "token=[REDACTED:token]"),
        ("client_secret: 'x9y8z7'", "client_secret: '[REDACTED:secret]'"),
        ('{"password": "hunter2", "user": "bob"}', '{"password": "[REDACTED:password]", "user": "bob"}'),
        ("Client(api_key='abc123')", "Client(api_key='[REDACTED:api_key]')"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key = [REDACTED:api_key]"),
        (
            "https://x.test/?access_token=abc123&page=2",
            "https://x.test/?access_token=[REDACTED:token]&page=2",
        ),
    ],
)
def test_generic_assignments_keep_the_key(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "password_field = forms.CharField()",
        "The token count is 512 and max_tokens: 4096",
        "token count: 5",
        "We use sk-learn and scikit-learn; sk-learn-compatibility-notes-for-all-versions",
        "def login(token: str, password: Optional[str] = None):",
        "token = next(tokens)",
        "client.call(api_key=api_key, token=self.token)",
        "password = getpass.getpass()",
        "secret = os.environ['SECRET']",
        "export GITHUB_TOKEN=$GITHUB_TOKEN",
        'token = "${API_TOKEN}"',
        "The token: we use JWTs for auth",
        "Authorization: handled by the gateway",
        "Use a Bearer token in the header",
        "if token == expected: pass",
        "tokens = tokenize(text)",
        "The password is stored in the vault.",
        "AKIA is the prefix of AWS access keys",
        "Run `make test` before release; see docs/README.md (section 3).",
        "ghp_ prefix means a personal token",
        "eyJ is how base64 JSON starts",
        "http://localhost:8080",
        "中文说明：密码保存在 vault 里",
        "password: null",
    ],
)
def test_ordinary_text_not_mangled(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        f"all: {ANTHROPIC} {OPENAI_PROJ} {AWS} {GITHUB['ghp']} {SLACK} {GOOGLE} {JWT}\n{PEM}",
        "password=hunter2 https://a:b@c Authorization: Bearer abc123def456ghi789",
        f"token={ANTHROPIC}",
        f"Authorization: Bearer {JWT}",
        "password: '[REDACTED:pass' and token=[REDACTED:x",
    ],
)
def test_redact_idempotent_examples(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


_FRAGMENTS = [
    ANTHROPIC, OPENAI_PROJ, AWS, GITHUB["pat"], SLACK, GOOGLE, JWT, PEM,
    "password", "token", "secret", "api_key", "=", ": ", " = ", '"', "'", "\n", " ", "hunter2",
    "https://", "user", ":", "@", "host", "/", "Authorization", "Bearer ", "abc123def456ghi789",
    "prose", "[", "]", "{", "}", "${X}", "sk-", "eyJ", ".", "-----BEGIN PRIVATE KEY-----", "[REDACTED:",
    "\u200b", "\u00ad", "\u200d", "--password ", "--token=", "-p", "mysql ", "curl -u ", "PGPASSWORD=",
    "sk_live_", "glpat-", "Pwd=", ";", "machine h login u password ", "Private-Lines: 1\n", "=>", ":=",
    "4eC39HqLyjWDarjtT1zdp7dc", "QwErTyUiOpAsDfGh",
]  # fmt: skip


@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=25))
def test_redact_idempotent_property(parts: list[str]) -> None:
    once = redact("".join(parts))
    assert redact(once) == once


@given(st.text(alphabet=st.characters(blacklist_characters="=:@-_BIJ", blacklist_categories=("Cs",))))
def test_redact_leaves_text_without_secret_shapes_alone(text: str) -> None:
    # No separators and no letter that starts a prefix (Bearer, AKIA/AIza, eyJ): nothing can
    # look like a secret.
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN PRIVATE KEY-----\n" * 20_000,
        "-----END PRIVATE KEY-----" * 20_000 + "-----BEGIN PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----\n" + "A" * 500_000,
        "a_" * 200_000,
        "password=" * 50_000,
        'password="' + "\\" * 100_000,
        "http://a:" * 50_000,
        "x" * 500_000,
        "authorization: " * 50_000,
        "eyJabcde." * 50_000,
        "curl " * 200_000,
        "mysql -u " * 100_000,
        "--password " * 100_000,
        "machine x login y " * 50_000,
        "Private-Lines: 1\n" + "A" * 200_000 + "!",
        "a\u200b" * 300_000,
        "password=a\u200b" * 100_000,
        "PASSWORD" * 100_000 + "=",
        "Authorization: Bearer " * 50_000,
        "123456789:A" * 50_000,
        ("M" + "a" * 24 + ".abcdef.") * 20_000,
        "aB" * 200_000 + "Token=x",
    ],
    ids=lambda t: f"{t[:16]!r}x{len(t)}",  # the whole input as its id floods every report
)
def test_redact_hostile_inputs_are_fast(text: str) -> None:
    # This process's CPU, not the wall clock: a busy shared machine must not fail a linear-time
    # pattern, and a backtracking one takes minutes of CPU on these inputs.
    start = time.process_time()
    once = redact(text)
    assert redact(once) == once
    assert time.process_time() - start < 10


# -- check_filename ----------------------------------------------------------------------

HOSTILE_NAMES = [
    "",
    ".",
    "..",
    "../x.md",
    "../../etc/passwd.md",
    "/etc/passwd",
    "/abs/x.md",
    "a/b.md",
    "a\\b.md",
    "x.md/..",
    "x..md",
    "..x.md",
    ".hidden.md",
    ".md",
    "MEMORY.md",
    "memory.md",
    "Memory.md",
    "ＭＥＭＯＲＹ.md",
    "x\x00.md",
    "x\n.md",
    "x\r.md",
    "x\t.md",
    "x\x1b[31m.md",
    "x\x7f.md",
    "\u202ex.md",
    "x\u202edm.exe.md",
    "x\u2066.md",
    "x\u200b.md",
    "x\ufeff.md",
    "x\u200d.md",
    "x\u2028.md",
    "x\ud800.md",
    " x.md",
    "x.md ",
    "x.md\u00a0",
    "CON",
    "x.txt",
    "x.md.bak",
    "x.MD",
    "x",
    "-rf.md",
    "--help.md",
    "a" * 253 + ".md",
    "中" * 85 + ".md",
    "x.md/",
    "~/x.md",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_filenames_refused(name: str) -> None:
    reason = check_filename(name)
    assert reason is not None
    assert "\n" not in reason


def test_enough_hostile_names() -> None:
    assert len(HOSTILE_NAMES) >= 40


@pytest.mark.parametrize(
    "name",
    [
        "project_knowledge_build.md",
        "user_preference_lang-2.md",
        "a.md",
        "my note.md",
        "说明.md",
        "x" * 252 + ".md",
        "CON.md",
        "notes (draft).md",
    ],
)
def test_ordinary_filenames_accepted(name: str) -> None:
    assert check_filename(name) is None


_BAD_CHARS = st.one_of(
    st.sampled_from(["/", "\\", "\x00", *BIDI, *ZERO_WIDTH, "\u2028", "\u2029"]),
    st.characters(whitelist_categories=("Cc",)),
)


@given(st.text(max_size=20), _BAD_CHARS, st.text(max_size=20))
def test_any_name_with_separator_control_or_bidi_refused(head: str, bad: str, tail: str) -> None:
    assert check_filename(f"{head}{bad}{tail}.md") is not None


# -- slugs -------------------------------------------------------------------------------


def test_slug_from_title() -> None:
    assert slugify("Build Workflow!", None) == "build-workflow"


def test_slug_prefers_op_slug() -> None:
    assert slugify("Build Workflow", "release-steps") == "release-steps"


def test_slug_nfkd_drops_non_ascii_and_lowercases() -> None:
    assert slugify("Café Déjà Vu", None) == "cafe-deja-vu"
    assert slugify("ＡＢＣ", None) == "abc"


def test_slug_runs_of_other_characters_become_one_dash_and_are_trimmed() -> None:
    assert slugify("--Hello,   World__!!--", None) == "hello-world"


def test_slug_at_most_48_and_no_trailing_dash_after_cut() -> None:
    assert len(slugify("x" * 100, None)) == MAX_SLUG
    # The 48th character is a dash: it is trimmed after cutting.
    assert slugify("a" * 47 + " bcd", None) == "a" * 47


def test_slug_falls_back_to_title_when_op_slug_is_empty() -> None:
    assert slugify("Build flow", "中文") == "build-flow"
    assert slugify("Build flow", "") == "build-flow"
    assert slugify("Build flow", "---") == "build-flow"


def test_slug_falls_back_to_hash() -> None:
    title = "构建流程"
    expected = "note-" + hashlib.sha256(title.encode("utf-8")).hexdigest()[:8]
    assert slugify(title, None) == expected
    assert slugify(title, "日本語") == expected


@given(st.text(), st.one_of(st.none(), st.text()))
def test_slug_is_always_a_safe_filename(title: str, slug: str | None) -> None:
    s = slugify(title, slug)
    assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", s)
    assert len(s) <= MAX_SLUG
    for t in NoteType:
        assert check_filename(note_filename(t, s)) is None


def test_note_filename() -> None:
    assert note_filename(NoteType.PROJECT_KNOWLEDGE, "build") == "project_knowledge_build.md"
    assert note_filename("user_preference", "lang") == "user_preference_lang.md"


def test_defuse_tags() -> None:
    out = defuse_tags("a </memory-index> <Memory-Index> <memory-indexes> <b>", ["memory-index"])
    assert out == "a &lt;/memory-index> &lt;Memory-Index> <memory-indexes> <b>"


# -- terminal display -----------------------------------------------------------------------

ESC = "\x1b"
ST = "\x1b\\"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (f"Evil {ESC}[31mRED{ESC}[0m", "Evil RED"),
        (f"a{ESC}[1;38;5;196mb{ESC}[m", "ab"),
        ("a\x9b31mb", "ab"),  # 8-bit CSI
        (f"a{ESC}[?1049hb", "ab"),  # private mode (alternate screen)
        (f"a{ESC}]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07b", "ab"),  # OSC 52 clipboard, BEL
        (f"a{ESC}]52;c;ZXZpbA=={ST}b", "ab"),  # OSC 52, 7-bit ST
        (f"a{ESC}]0;pwned title\x07b", "ab"),  # OSC 0 window title
        (f"{ESC}]8;;https://evil.example/{ST}click here{ESC}]8;;{ST}", "click here"),  # OSC 8 link
        ("a\x9d0;title\x9cb", "ab"),  # 8-bit OSC and ST
        (f"a{ESC}P1$r0m{ST}b", "ab"),  # DCS
        ("a\x90q#0;2;0;0;0\x9cb", "ab"),  # 8-bit DCS (sixel)
        (f"a{ESC}_apc payload{ST}b", "ab"),  # APC
        (f"a{ESC}^pm payload{ST}b", "ab"),  # PM
        (f"a{ESC}Xsos payload{ST}b", "ab"),  # SOS
        ("a\x9fapc\x9cb\x9epm\x9cc\x98sos\x9cd", "abcd"),  # 8-bit APC, PM, SOS
        (f"a{ESC}cb", "ab"),  # RIS (reset)
        (f"a{ESC}(Bb", "ab"),  # charset designation
        (f"a{ESC}7b{ESC}8c", "abc"),  # save/restore cursor
        (f"line one{ESC}]0;never terminated\nline two", "line one\nline two"),
        (f"cut off {ESC}[31", "cut off "),
        (f"cut off {ESC}", "cut off "),
        ("tab\tand\nnewline kept", "tab\tand\nnewline kept"),
        ("crlf\r\nline", "crlf\nline"),
        ("safe command\rrm -rf ~", "safe command\nrm -rf ~"),  # a bare CR cannot overwrite
        ("bell\x07 backspace\x08 nul\x00 del\x7f", "bell backspace nul del"),
        ("bidi \u202eevil\u202c \u2066x\u2069", "bidi evil x"),
        ("tags \U000e0041\U000e0042 hidden", "tags  hidden"),
        ("sep\u2028line", "sep\nline"),
        ("family 👨\u200d👩\u200d👧 می\u200cخواهم", "family 👨\u200d👩\u200d👧 می\u200cخواهم"),
    ],
)
def test_strip_terminal_removes_whole_sequences_and_controls(raw: str, expected: str) -> None:
    assert strip_terminal(raw) == expected


def test_strip_terminal_one_line_turns_line_breaks_into_spaces() -> None:
    assert strip_terminal("a\nb\r\nc\rd\u2029e", keep_newlines=False) == "a b c d e"


def test_unterminated_control_string_hides_only_the_rest_of_its_line() -> None:
    # A terminal would swallow everything after it; shown here, the next lines stay visible
    # and the payload (title, clipboard data) never is.
    out = strip_terminal(f"ok{ESC}]52;c;c2VjcmV0\nnext line\n")
    assert out == "ok\nnext line\n"


_PLAIN = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp"), blacklist_characters="\r")
    | st.sampled_from(["\n", "\t"])
)


@given(st.text())
def test_strip_terminal_output_has_no_escape_or_control(text: str) -> None:
    for keep in (True, False):
        out = strip_terminal(text, keep_newlines=keep)
        assert "\x1b" not in out
        assert not any(0x80 <= ord(c) <= 0x9F for c in out)
        assert all(c in "\n\t" or c in "\u200c\u200d" or not is_unsafe_char(c) for c in out)
        assert is_strict_utf8(out)
        assert strip_terminal(out, keep_newlines=keep) == out
        if not keep:
            assert "\n" not in out


@given(_PLAIN)
def test_strip_terminal_leaves_plain_text_unchanged(text: str) -> None:
    assert strip_terminal(text) == text


_CSI = st.builds(
    lambda intro, params, inter, final: intro + params + inter + final,
    st.sampled_from([ESC + "[", "\x9b"]),
    st.text(alphabet="0123456789;:<=>?", max_size=12),
    st.text(alphabet=" !\"#$%&'()*+,-./", max_size=2),
    st.sampled_from([chr(c) for c in range(0x40, 0x7F)]),
)
_CONTROL_STRING = st.builds(
    lambda intro, payload, end: intro + payload + end,
    st.sampled_from(
        [ESC + "]", ESC + "P", ESC + "X", ESC + "^", ESC + "_", "\x9d", "\x90", "\x98", "\x9e", "\x9f"]
    ),
    st.text(
        alphabet=st.characters(blacklist_characters="\x07\x1b\x9c\n", blacklist_categories=("Cs",)),
        max_size=30,
    ),
    st.sampled_from(["\x07", ST, "\x9c"]),
)


@given(_PLAIN, st.one_of(_CSI, _CONTROL_STRING), _PLAIN)
def test_a_whole_sequence_leaves_no_remnant(before: str, seq: str, after: str) -> None:
    assert strip_terminal(before + seq + after) == before + after


def test_titles_summaries_and_slugs_drop_whole_sequences() -> None:
    raw = f"Evil {ESC}[31mRED{ESC}[0m {ESC}]0;title\x07done"
    assert sanitize_title(raw) == "Evil RED done"
    assert sanitize_summary(raw) == "Evil RED done"
    assert slugify(raw, None) == "evil-red-done"
    assert slugify("x", f"{ESC}[31mbuild{ESC}[0m") == "build"


@given(_PLAIN, _CSI, _PLAIN)
def test_sanitize_line_leaves_no_csi_remnant(before: str, seq: str, after: str) -> None:
    assert sanitize_line(before + seq + after, 1000) == sanitize_line(before + after, 1000)


def test_slug_never_carries_a_secret() -> None:
    for title in (f"Deploy with {AWS}", f"{ANTHROPIC} setup", f"password={'hunter2'} notes"):
        slug = slugify(title, None)
        assert AWS.lower() not in slug and "hunter2" not in slug and ANTHROPIC.lower()[:20] not in slug
    assert slugify(f"Deploy with {AWS}", None) == "deploy-with-redacted-aws-access-key"
    assert AWS.lower() not in slugify("Deploy", f"key-{AWS}")


def test_filename_reasons_quote_values_redacted() -> None:
    for name in (f"../{ANTHROPIC}.md", f"{AWS}\u202e.md", f"x{ESC}]0;t\x07{AWS}/y.md"):
        reason = check_filename(name)
        assert reason is not None
        assert ANTHROPIC not in reason and AWS not in reason and ESC not in reason
        assert "[REDACTED:" in reason


def test_quote_redacts_strips_and_shortens() -> None:
    q = quote(f"{ESC}]52;c;ZXZpbA==\x07 {AWS} " + "x" * 200, limit=40)
    assert AWS not in q and ESC not in q and "\x07" not in q
    assert len(q) <= 42 and q.endswith("…'")
    assert quote("a\nb") == "'a b'"


# -- stripping a stream ------------------------------------------------------------------------


def _stream(text: str, cuts: list[int], *, keep_newlines: bool = True) -> str:
    """``text`` fed to one stripper in the pieces that ``cuts`` (positions) make, then flushed."""
    stripper = TerminalStreamStripper(keep_newlines=keep_newlines)
    bounds = [0, *sorted({min(max(c, 0), len(text)) for c in cuts}), len(text)]
    out = [stripper.feed(text[a:b]) for a, b in itertools.pairwise(bounds)]
    return "".join(out) + stripper.flush()


# Text dense in the bytes that open, continue and end sequences, so splits land inside them.
_SEQ_ALPHABET = st.sampled_from(
    [
        ESC,
        "[",
        "]",
        "P",
        "X",
        "^",
        "_",
        "\\",
        "\x07",
        "\x9c",
        "\x9b",
        "\x9d",
        "\x90",
        "\x98",
        "\x9e",
        "\x9f",
        "\n",
        "\r",
        "\t",
        "0",
        "5",
        ";",
        "?",
        " ",
        "/",
        "(",
        "m",
        "B",
        "@",
        "~",
        "c",
        "a",
        "é",
        "\u2028",
        "\x00",
        "\u202e",
        "👍",
    ]
)
_SEQ_TEXT = st.lists(_SEQ_ALPHABET, max_size=40).map("".join) | st.text(max_size=40)


@given(_SEQ_TEXT, st.lists(st.integers(min_value=0, max_value=40), max_size=12), st.booleans())
def test_stream_stripper_over_any_split_equals_strip_terminal_of_the_whole(
    text: str, cuts: list[int], keep_newlines: bool
) -> None:
    assert _stream(text, cuts, keep_newlines=keep_newlines) == strip_terminal(
        text, keep_newlines=keep_newlines
    )


@given(_SEQ_TEXT)
def test_stream_stripper_one_character_at_a_time_equals_strip_terminal(text: str) -> None:
    assert _stream(text, list(range(len(text)))) == strip_terminal(text)


@pytest.mark.parametrize(
    ("pieces", "shown"),
    [
        # OSC 52 (set the clipboard) cut after its opener: the payload must not show.
        ([f"copied {ESC}", "]52;c;aGFja2Vk", "\x07 done"], "copied  done"),
        ([f"copied {ESC}]5", "2;c;aGFj", "a2Vk", f"{ESC}", "\\ done"], "copied  done"),
        # Blink on and off, cut inside both sequences.
        ([f"{ESC}", "[5mblink", f"{ESC}", "[0m!"], "blink!"),
        ([f"{ESC}[", "5", "mblink", f"{ESC}[0", "m!"], "blink!"),
        (["a\x9b3", "1mb\x9d0;t", "itle\x9cc"], "abc"),  # 8-bit CSI and OSC
        (["line\r", "\nnext"], "line\nnext"),  # CR LF split: one line break
        (["line\r", f"{ESC}[0m", "\nnext"], "line\nnext"),
    ],
)
def test_stream_stripper_leaves_no_fragment_of_a_sequence_split_between_chunks(
    pieces: list[str], shown: str
) -> None:
    stripper = TerminalStreamStripper()
    out = "".join(stripper.feed(p) for p in pieces) + stripper.flush()
    assert out == shown == strip_terminal("".join(pieces))
    # Stripped chunk by chunk, the same pieces leave fragments: that is what the stream prevents.
    assert "".join(strip_terminal(p) for p in pieces) != shown


def test_stream_stripper_shows_text_at_once_and_holds_only_an_open_sequence() -> None:
    stripper = TerminalStreamStripper()
    assert stripper.feed("plain text ") == "plain text "
    assert not stripper.holding
    assert stripper.feed(f"then {ESC}[3") == "then "
    assert stripper.holding
    assert stripper.feed("1mred") == "red"
    assert stripper.feed(f"{ESC}") == ""
    assert stripper.flush() == ""  # a lone ESC at the end shows nothing
    assert not stripper.holding


def test_stream_stripper_drops_an_unterminated_osc_of_megabytes_without_holding_it() -> None:
    stripper = TerminalStreamStripper()
    assert stripper.feed(f"before {ESC}]52;c;") == "before "
    for _ in range(1000):  # 4 MB of clipboard payload that never ends
        assert stripper.feed("aGFja2Vk" * 512) == ""
        assert len(stripper._held) <= 2  # the payload is not kept
    # It ends at the end of its line, as strip_terminal ends it; the next line shows.
    assert stripper.feed("tail\nnext line") == "\nnext line"
    assert stripper.flush() == ""


# -- counting lines ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("", 0),
        ("one", 1),
        ("one\n", 1),
        ("one\ntwo", 2),
        ("one\ntwo\n", 2),
        ("one\r\ntwo\r\n", 2),
        ("one\r\ntwo", 2),
        ("one\rtwo", 2),
        ("\n", 1),
        ("\n\n", 2),
        ("one\n\n", 2),
    ],
)
def test_line_count_counts_a_final_line_break_as_no_further_line(text: str, count: int) -> None:
    assert line_count(text) == count == len(split_lines(text))


def test_split_lines_drops_line_breaks_of_every_kind() -> None:
    assert split_lines("a\r\nb\rc\nd\n") == ["a", "b", "c", "d"]
    assert split_lines("a\n\nb") == ["a", "", "b"]

"""Redaction corpus: every credential format we know of is redacted, and
ordinary prose and code pass through unchanged.

Fake values are generated here (deterministic, never a real key): a literal key in the
repository would trip secret scanners and teach nothing the shape does not.
"""

from __future__ import annotations

import random
import string
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.extract.prompt import build_extraction_request
from memory.model import Turn, TurnMessage
from memory.text.redact import redact, redact_url_credentials

_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"


def _fake(alphabet: str, n: int, seed: str) -> str:
    """A deterministic random string that looks like key material (mixed case and digits)."""
    rng = random.Random(seed)
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        mixed = alphabet != _ALNUM or (
            any(c.isdigit() for c in s) and any(c.islower() for c in s) and any(c.isupper() for c in s)
        )
        if mixed:
            return s


def _pem(label: str, seed: str) -> str:
    body = "\n".join(_fake(_B64, 64, f"{seed}{i}") for i in range(4))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


_PUTTY = (
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me@host\nPublic-Lines: 2\n"
    f"{_fake(_B64, 64, 'pp1')}\n{_fake(_B64, 20, 'pp2')}\nPrivate-Lines: 1\n{_fake(_B64, 44, 'pp3')}\n"
    f"Private-MAC: {_fake(_HEX, 64, 'pp4')}"
)
_PUTTY_PRIVATE = _PUTTY.split("Private-Lines: 1\n")[1].split("\n")[0]

_JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + _fake(_URLSAFE, 43, "jwt")
_ANTHROPIC = "sk-ant-api03-" + _fake(_URLSAFE, 93, "ant") + "-AA"
_AWS_ID = "AKIA" + _fake(string.ascii_uppercase + string.digits, 16, "aws")
_GH = "ghp_" + _fake(_ALNUM, 36, "ghp")

_UPPER_DIGITS = string.ascii_uppercase + string.digits
# (format, a whole token): the text around it is "use <token> here".
_VENDOR_TOKENS: list[tuple[str, str]] = [
    ("anthropic_api_key", _ANTHROPIC),
    ("openai_legacy_key", f"sk-{_fake(_ALNUM, 20, 'o1')}T3BlbkFJ{_fake(_ALNUM, 20, 'o2')}"),
    ("openai_project_key", f"sk-proj-{_fake(_URLSAFE, 56, 'op')}"),
    ("openrouter_key", f"sk-or-v1-{_fake(_HEX, 64, 'or')}"),
    ("aws_access_key_id", _AWS_ID),
    ("aws_sts_key_id", "ASIA" + _fake(_UPPER_DIGITS, 16, "sts")),
    ("github_classic_pat", _GH),
    ("github_oauth_token", f"gho_{_fake(_ALNUM, 36, 'gho')}"),
    ("github_fine_grained_pat", f"github_pat_11{_fake(_ALNUM, 20, 'gf')}_{_fake(_ALNUM, 59, 'gf2')}"),
    ("gitlab_pat", f"glpat-{_fake(_URLSAFE, 20, 'glpat')}"),
    ("gitlab_deploy_token", f"gldt-{_fake(_URLSAFE, 20, 'gldt')}"),
    ("gitlab_runner_token", f"GR1348941{_fake(_URLSAFE, 20, 'glr')}"),
    ("stripe_secret_key", f"sk_live_{_fake(_ALNUM, 99, 'stripe')}"),
    ("stripe_restricted_key", f"rk_live_{_fake(_ALNUM, 24, 'rk')}"),
    ("stripe_test_key", f"sk_test_{_fake(_ALNUM, 24, 'skt')}"),
    ("stripe_webhook_secret", f"whsec_{_fake(_ALNUM, 32, 'wh')}"),
    ("npm_token", f"npm_{_fake(_ALNUM, 36, 'npm')}"),
    ("huggingface_token", f"hf_{_fake(string.ascii_letters, 34, 'hf')}"),
    ("pypi_token", f"pypi-AgEIcHlwaS5vcmc{_fake(_URLSAFE, 80, 'pypi')}"),
    ("sendgrid_key", f"SG.{_fake(_URLSAFE, 22, 'sg1')}.{_fake(_URLSAFE, 43, 'sg2')}"),
    ("slack_bot_token", f"xoxb-1234567890-0987654321-{_fake(_ALNUM, 24, 'xoxb')}"),
    (
        "slack_webhook",
        f"https://hooks.slack.com/services/T0{_fake(_ALNUM, 8, 's1')}/B0{_fake(_ALNUM, 8, 's2')}/"
        f"{_fake(_ALNUM, 24, 's3')}",
    ),
    ("discord_webhook", f"https://discord.com/api/webhooks/123456789012345678/{_fake(_URLSAFE, 68, 'dw')}"),
    (
        "discord_bot_token",
        f"M{_fake(_URLSAFE, 23, 'db1')}.{_fake(_URLSAFE, 6, 'db2')}.{_fake(_URLSAFE, 27, 'db3')}",
    ),
    ("telegram_bot_token", f"123456789:AA{_fake(_URLSAFE, 33, 'tg')}"),
    ("google_api_key", f"AIza{_fake(_URLSAFE, 35, 'gapi')}"),
    ("google_oauth_client_secret", f"GOCSPX-{_fake(_URLSAFE, 28, 'gcs')}"),
    ("twilio_api_key", f"SK{_fake(_HEX, 32, 'tw')}"),
    ("mailchimp_key", f"{_fake(_HEX, 32, 'mc')}-us6"),
    ("square_access_token", f"sq0atp-{_fake(_URLSAFE, 22, 'sq')}"),
    ("shopify_token", f"shpat_{_fake(_HEX, 32, 'shp')}"),
    ("digitalocean_token", f"dop_v1_{_fake(_HEX, 64, 'do')}"),
    ("databricks_token", f"dapi{_fake(_HEX, 32, 'dapi')}"),
    ("vault_token", f"hvs.{_fake(_URLSAFE, 90, 'hvs')}"),
    ("grafana_service_account", f"glsa_{_fake(_ALNUM, 32, 'gr')}_{_fake(_HEX, 8, 'gr2')}"),
    ("atlassian_api_token", f"ATATT3xFfGF0{_fake(_URLSAFE, 180, 'atl')}"),
    ("linear_api_key", f"lin_api_{_fake(_ALNUM, 40, 'lin')}"),
    ("postman_api_key", f"PMAK-{_fake(_HEX, 24, 'pm1')}-{_fake(_HEX, 34, 'pm2')}"),
    ("doppler_token", f"dp.pt.{_fake(_ALNUM, 43, 'dp')}"),
    ("pulumi_token", f"pul-{_fake(_HEX, 40, 'pul')}"),
    ("age_secret_key", "AGE-SECRET-KEY-1" + _fake(_UPPER_DIGITS, 58, "age")),
    ("groq_key", f"gsk_{_fake(_ALNUM, 52, 'gsk')}"),
    ("artifactory_token", f"AKCp{_fake(_ALNUM, 69, 'akc')}"),
    ("sentry_token", f"sntrys_{_fake(_B64, 60, 'sen')}"),
    ("jwt", _JWT),
]

# (format, text, secret): the secret must be gone, the words around it kept.
CORPUS: list[tuple[str, str, str]] = [
    # -- vendor keys recognised by their shape (detect-secrets' plugins and newer vendors)
    *[(name, f"use {token} here", token) for name, token in _VENDOR_TOKENS],
    (
        "aws_secret_access_key",
        f"aws_secret_access_key = {_fake(_B64, 40, 'awss')}\nnext",
        _fake(_B64, 40, "awss"),
    ),
    (
        "npmrc_auth_token",
        "//registry.npmjs.org/:_authToken=" + "4f3a9c0d-2b7e-4a1f-8c6d-5e3b2a1f0e9d" + "\nnext",
        "4f3a9c0d-2b7e",
    ),
    # -- private keys
    ("rsa_private_key", f"key\n{_pem('RSA PRIVATE KEY', 'rsa')}\nafter", _fake(_B64, 64, "rsa1")),
    ("openssh_private_key", f"key\n{_pem('OPENSSH PRIVATE KEY', 'ossh')}\nafter", _fake(_B64, 64, "ossh2")),
    (
        "private_key_in_json_string",
        '{"private_key": "' + _pem("PRIVATE KEY", "gcp").replace("\n", "\\n") + '\\n", "x": 1}',
        _fake(_B64, 64, "gcp0"),
    ),
    ("putty_private_key", f"ppk\n{_PUTTY}\nafter", _PUTTY_PRIVATE),
    # -- URLs and headers
    ("url_password", "db postgres://admin:Sup3r-s3cret@db.local:5432/app here", "Sup3r-s3cret"),
    (
        "base_url_credentials",
        "ANTHROPIC_BASE_URL=http://proxyuser:pr0xyPass@proxy.local:8080/v1",
        "pr0xyPass",
    ),
    (
        "authorization_bearer_without_digits",
        "Authorization: Bearer QwErTyUiOpAsDfGh\nnext",
        "QwErTyUiOpAsDfGh",
    ),
    ("authorization_basic", "Authorization: Basic YWxpY2U6aHVudGVyMg==\nnext", "YWxpY2U6aHVudGVyMg"),
    ("authorization_token_scheme", "Authorization: token s3cr3tvalue99\nnext", "s3cr3tvalue99"),
    (
        "authorization_bearer_lowercase_letters",
        "curl -H 'authorization: bearer lowercaseonly' x",
        "lowercaseonly",
    ),
    ("bearer_in_text", f"send Bearer {_fake(_ALNUM, 32, 'br')} along", _fake(_ALNUM, 32, "br")),
    ("x_api_key_header", 'curl -H "X-Api-Key: k3yV4lue123" https://api.example.com', "k3yV4lue123"),
    # -- command lines
    ("cli_password_equals", "run app --password=hunter2 --verbose", "hunter2"),
    ("cli_password_space", "run app --verbose --password hunter2 now", "hunter2"),
    ("cli_db_password_quoted", "run app --db-password 'correct horse' now", "correct horse"),
    ("cli_api_token", "deploy --api-token tok3nValue now", "tok3nValue"),
    ("java_system_property", "java -Djavax.net.ssl.keyStorePassword=changeit9 -jar app.jar", "changeit9"),
    ("curl_user_password", "curl -u alice:hunter2 https://api.example.com", "hunter2"),
    ("curl_long_user_password", "curl --user 'alice:correct horse' https://x.example", "correct horse"),
    ("mysql_attached_password", "mysql -u root -pS3cretPw app_db", "S3cretPw"),
    ("mysqldump_attached_password", "mysqldump -uroot -p'p@ss word' app > dump.sql", "p@ss word"),
    ("sshpass_password", "sshpass -p hunter2 ssh deploy@host", "hunter2"),
    ("docker_login_password", "docker login -u bob -p d0ckerPw registry.example.com", "d0ckerPw"),
    ("netrc_password", "machine api.example.com login bob password n3trcPw\n", "n3trcPw"),
    # -- environment variables and assignments
    ("pgpassword", "PGPASSWORD=hunter2 psql -h db -U app", "hunter2"),
    ("mysql_pwd", "MYSQL_PWD=hunter2 mysql -u root", "hunter2"),
    ("db_pass", "export DB_PASS=hunter2\nnext", "hunter2"),
    ("secret_key_base", "SECRET_KEY_BASE=" + _fake(_HEX, 128, "skb") + "\nnext", _fake(_HEX, 128, "skb")),
    (
        "django_secret_key",
        "SECRET_KEY = 'django-insecure-" + _fake(_ALNUM, 40, "dj") + "'",
        "django-insecure-",
    ),
    ("password_assignment", "password=hunter2 and more", "hunter2"),
    ("non_ascii_password", "password=пароль and more", "пароль"),
    ("yaml_password", "db:\n  password: hunter2\n  user: app", "hunter2"),
    ("json_password", '{"user": "bob", "password": "hunter2"}', "hunter2"),
    ("camelcase_client_secret", 'clientSecret: "cl13ntS3cret"', "cl13ntS3cret"),
    ("php_variable", "$password = 'hunter2';", "hunter2"),
    ("ruby_hash_rocket", '{ "password" => "hunter2" }', "hunter2"),
    ("go_short_assignment", 'apiToken := "t0kenValue42"', "t0kenValue42"),
    ("connection_string", "Server=db;Database=app;User Id=sa;Password=Hunter2!;Encrypt=true", "Hunter2!"),
    ("connection_string_pwd", "Driver={SQL Server};Server=db;Uid=sa;Pwd=Hunter2!;", "Hunter2!"),
    (
        "azure_storage_account_key",
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + _fake(_B64, 86, "az") + "==;",
        _fake(_B64, 86, "az"),
    ),
    (
        "azure_shared_access_key",
        "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey="
        + _fake(_B64, 43, "sb")
        + "=",
        _fake(_B64, 43, "sb"),
    ),
    # -- keys hidden from pattern matching by invisible characters
    ("zero_width_split_anthropic_key", f"key {_ANTHROPIC[:20]}\u200b{_ANTHROPIC[20:]} here", _ANTHROPIC[20:]),
    ("zero_width_split_aws_key", f"id {_AWS_ID[:4]}\u200c{_AWS_ID[4:]} here", _AWS_ID[4:]),
    ("soft_hyphen_split_github_token", f"token {_GH[:10]}\u00ad{_GH[10:]} here", _GH[10:]),
    ("word_joiner_split_password", "password=hun\u2060ter2 and more", "ter2"),
]


def test_corpus_is_large_and_names_are_unique() -> None:
    names = [name for name, _, _ in CORPUS]
    assert len(names) >= 40
    assert len(set(names)) == len(names)


@pytest.mark.parametrize(("text", "secret"), [(t, s) for _, t, s in CORPUS], ids=[n for n, _, _ in CORPUS])
def test_each_format_is_redacted(text: str, secret: str) -> None:
    assert secret in text  # the case is built right
    out = redact(text)
    assert secret not in out
    assert "[REDACTED:" in out
    # The words around the secret are kept.
    first, last = text.split()[0], text.split()[-1]
    assert secret in first or out.startswith(first)
    assert secret in last or out.endswith(last)
    assert redact(out) == out


# Ordinary prose and code, some of it close to a secret's shape: never changed.
NEGATIVE: list[str] = [
    "Run `make test` before release; see docs/README.md (section 3).",
    "The --password flag reads the password from stdin.",
    "Pass --token to the CLI when the default one expires.",
    "Use --password-file ~/.pw instead of --password on shared machines.",
    "git push -u origin main",
    "docker exec -u 1000:1000 app sh",
    "mysql -u root -p app_db  # asks for the password",
    "ssh -p 2222 deploy@example.com",
    "psql -h localhost -U postgres -d app",
    "curl -X POST https://api.example.com/v1/items -d '{\"a\": 1}'",
    "Bearer authentication is described in RFC 6750.",
    "Authorization: Bearer tokens are short-lived",
    "commit 3f6150b4e2a1c9d8f7e6b5a4c3d2e1f0a9b8c7d6 fixed the flaky test",
    "tenant 123e4567-e89b-12d3-a456-426614174000 is the default",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "PWD=/home/bob/project make",
    "bypass = true",
    "compass: north",
    "max_tokens: 4096 and token_count = 12",
    "from huggingface_hub import hf_hub_download",
    "npm_config_cache=/tmp/npm npm ci",
    "sk_live_mode = False",
    "SG.Config is the SendGrid config class",
    "Read SECRET_KEY from the environment, never commit it.",
    "See https://docs.stripe.com/keys#obtain-api-keys for restricted keys.",
    "api_key = os.environ['API_KEY']",
    "password_hash = bcrypt.hash(pw)",
    "let secret = await vault.read('db');",
    "password = new PasswordField(label)",
    "const token = req.headers.authorization;",
    "password: ${{ secrets.DB_PASSWORD }}",
    "api_key: !ENV ${API_KEY}",
    "x = {'key': value}",
    "if (password.length < 8) return false;",
    "headers['Authorization'] = f'Bearer {token}'",
    "token: str | None = None",
    'masked = {"password": ":****"}',
    "self.api_key = api_key",
    "api_key=resolved_api_key,",
    'ENV_API_KEY = "ANTHROPIC_API_KEY"',
    "token = Name",
    "token_endpoint_auth: TokenEndpointAuth",
    "The AccountKey parameter is required for storage accounts.",
    "family 👨\u200d👩\u200d👧 and می\u200cخواهم stay as they are",
    "Telegram bot tokens look like 123456:ABC-DEF",
    "Use sk-learn-compatibility-notes-for-all-versions",
    "ghp_ prefix means a personal token; glpat- is GitLab's",
    "AuthenticationHandler and Bearer AuthenticationHandlerFactory are classes",
    "The password is stored in the vault; the token in the keychain.",
    "中文说明：密码保存在 vault 里",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_negative_corpus_is_large() -> None:
    assert len(NEGATIVE) >= 40


# -- URL credentials for diagnostics (H4 prints ANTHROPIC_BASE_URL with it) ---------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "ANTHROPIC_BASE_URL=http://user:pa55@proxy.local:8080/v1",
            "ANTHROPIC_BASE_URL=http://user:[REDACTED:url_password]@proxy.local:8080/v1",
        ),
        ("https://:tok@host/x", "https://:[REDACTED:url_password]@host/x"),
        ("ANTHROPIC_BASE_URL=http://user:pass@h", "ANTHROPIC_BASE_URL=http://user:[REDACTED:url_password]@h"),
        ("http://localhost:8080/v1", "http://localhost:8080/v1"),
        ("https://user@host/x", "https://user@host/x"),
        ("no url here", "no url here"),
    ],
)
def test_redact_url_credentials_strips_only_the_password(text: str, expected: str) -> None:
    assert redact_url_credentials(text) == expected
    assert redact(text) == expected


# -- the extraction request never hands the memory model a secret -------------------------


def test_extraction_request_carries_no_secret_from_the_turn() -> None:
    secrets = [s for _, _, s in CORPUS]
    turn = Turn(
        messages=[
            TurnMessage(role="user", text="\n".join(t for _, t, _ in CORPUS[:45])),
            TurnMessage(role="assistant", text="\n".join(t for _, t, _ in CORPUS[45:])),
        ]
    )
    req = build_extraction_request([turn], "", "")
    for secret in secrets:
        assert secret not in req.prompt and secret not in req.system
    assert "[REDACTED:" in req.prompt


# -- speed: redact runs on every note and every turn --------------------------------------


def test_redact_a_mebibyte_of_mixed_text_is_fast() -> None:
    chunk = (
        "def login(token: str, password: str | None = None) -> None:\n"
        "    headers = {'Authorization': f'Bearer {token}'}  # see https://example.com/docs?page=2\n"
        "The token count is 512; run `make test` before release. 中文说明：密码保存在 vault 里。\n"
    )
    text = (chunk * (2**20 // len(chunk.encode()) + 1))[: 2**20]
    start = time.perf_counter()
    out = redact(text)
    elapsed = time.perf_counter() - start
    assert out == text
    # About 0.1-0.2 s here; the bound only catches a pathological regression on a slow machine.
    assert elapsed < 5


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("--password=x", "--password=[REDACTED:password]"),
        ("--password x", "--password [REDACTED:password]"),
        ("PGPASSWORD=x psql", "PGPASSWORD=[REDACTED:password] psql"),
        ("MYSQL_PWD=x mysql", "MYSQL_PWD=[REDACTED:password] mysql"),
        ("DB_PASS=x", "DB_PASS=[REDACTED:password]"),
        ("SECRET_KEY_BASE=x", "SECRET_KEY_BASE=[REDACTED:secret]"),
        ("password=1234", "password=[REDACTED:password]"),
        ("mysql -px", "mysql -p[REDACTED:password]"),
        ("curl -u u:p", "curl -u u:[REDACTED:password]"),
    ],
)
def test_issue_forms_are_redacted_even_with_a_one_letter_value(text: str, expected: str) -> None:
    # The issue writes these with placeholder values; a real value can be that short too.
    assert redact(text) == expected


_HIDDEN = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e", "\u202e", "\U000e0041"]


@given(
    st.sampled_from([t for _, t in _VENDOR_TOKENS if "://" not in t]),
    st.lists(st.tuples(st.integers(min_value=1), st.sampled_from(_HIDDEN)), min_size=1, max_size=3),
)
def test_invisible_characters_inside_a_key_do_not_hide_it(token: str, cuts: list[tuple[int, str]]) -> None:
    split = token
    for pos, char in cuts:
        at = 1 + pos % (len(split) - 1)
        split = split[:at] + char + split[at:]
    out = redact(f"use {split} here")
    visible = "".join(c for c in out if c not in _HIDDEN)
    assert token[-12:] not in visible and "[REDACTED:" in out
    assert out.startswith("use ") and out.endswith(" here")

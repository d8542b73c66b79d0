"""A server's configured secrets (its env values, its header values, as written and as expanded)
are masked in what is shown of what it says: its stderr's last line (masked before it is cut),
and the SDK's log lines about it."""

from __future__ import annotations

import logging

import pytest

from app.agent.extensions.mcp import HttpServer, StdioServer
from app.agent.extensions.mcp.masking import SDK_LOGS, SecretMask, guard_sdk_logs, secrets_of
from app.agent.extensions.mcp.stdio import StderrTail


def test_env_values_as_written_and_expanded_are_masked() -> None:
    server = StdioServer(
        "s",
        "srv",
        env=(
            ("TOKEN", "ENVSECRET-777"),
            ("KEY", "${MY_KEY}"),
            ("URL", "https://u:${MY_PASS}@host"),
            ("DEBUG", "1"),
        ),
    )
    mask = secrets_of(server, {"MY_KEY": "from-the-env-42", "MY_PASS": "hunter22"})
    text = "TOKEN=ENVSECRET-777 KEY=from-the-env-42 URL=https://u:hunter22@host DEBUG=1 exited (code 1)"
    assert mask(text) == "TOKEN=*** KEY=*** URL=*** DEBUG=1 exited (code 1)"
    assert mask("only hunter22 alone") == "only *** alone"  # a variable's value inside a longer one


def test_a_header_credential_is_masked_whole_and_alone() -> None:
    server = HttpServer(
        "h",
        "https://example.test/mcp",
        (("Authorization", "Bearer ${GH_TOKEN}"), ("X-Api-Key", "literal-key-9")),
    )
    mask = secrets_of(server, {"GH_TOKEN": "ghp_abcdef123"})
    assert mask("sent Bearer ghp_abcdef123 and literal-key-9") == "sent *** and ***"
    assert mask("token ghp_abcdef123 refused") == "token *** refused"


def test_an_unset_variable_leaves_what_is_known_masked() -> None:
    server = StdioServer("s", "srv", env=(("A", "${NOT_SET_HERE}"), ("B", "plain-secret")))
    mask = secrets_of(server, {})
    assert mask("B=plain-secret A=") == "B=*** A="


def test_short_values_are_not_masked() -> None:
    assert not SecretMask(["1", "on", "abc"])
    assert SecretMask(["abcd"])("xabcdx") == "x***x"


def test_the_stderr_line_is_masked_before_it_is_cut() -> None:
    secret = "S" * 40
    tail = StderrTail(mask=SecretMask([secret]))
    # The secret starts before the line's cut (200 characters) and ends after it.
    tail.add(("x" * 180 + secret + " tail\n").encode())
    line = tail.last_line()
    assert "S" not in line and "***" in line


@pytest.fixture
def sdk_logger() -> logging.Logger:
    logger = logging.getLogger("mcp.client.test_masking")
    guard_sdk_logs()
    return logger


def test_the_sdks_log_lines_are_masked_while_the_server_runs(
    sdk_logger: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    mask = SecretMask(["ENVSECRET-777"])
    SDK_LOGS.add(mask)
    try:
        with caplog.at_level(logging.WARNING):
            sdk_logger.warning("Unknown SSE event: %s", "TOKEN=ENVSECRET-777")
            try:
                raise ValueError("bad ENVSECRET-777")
            except ValueError:
                sdk_logger.exception("reading failed")
    finally:
        SDK_LOGS.discard(mask)
    shown = "\n".join(caplog.text.splitlines() + [r.getMessage() for r in caplog.records])
    assert "ENVSECRET-777" not in shown
    assert "Unknown SSE event: TOKEN=***" in shown and "ValueError: bad ***" in shown

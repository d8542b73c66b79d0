"""What names a command at the start of a prompt (``parse_invocation``): a path never does."""

from __future__ import annotations

import pytest

from app.agent.extensions.custom_commands import parse_invocation


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("/help", ("help", "")),
        ("/help me", ("help", "me")),
        ("  /review src/app.py --fix ", ("review", "src/app.py --fix")),
        ("/frontend:lint a\nb", ("frontend:lint", "a\nb")),
        ("/mcp__github__pr_summary 42", ("mcp__github__pr_summary", "42")),
        ("/v1.2-beta", ("v1.2-beta", "")),
        ("/tmp is full", ("tmp", "is full")),  # a lone first word is a name: /tmp/ or //tmp sends it
    ],
)
def test_a_name_followed_by_a_space_or_the_end_is_a_command(text: str, want: tuple[str, str]) -> None:
    assert parse_invocation(text) == want


@pytest.mark.parametrize(
    "text",
    [
        "/etc/hosts is odd, why?",
        "/usr/bin/env python",
        "/tmp/ is full",
        "//tmp is full",
        "/",
        "/ alone",
        "/.. up",
        "/héllo",
        "/a=b",
        "plain words",
        "see /help",
    ],
)
def test_a_path_or_anything_else_is_not(text: str) -> None:
    assert parse_invocation(text) is None

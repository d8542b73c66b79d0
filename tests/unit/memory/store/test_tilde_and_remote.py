"""The home path written ``~`` only where it stands as a whole path; a remote that is a URL or a path."""

from __future__ import annotations

import pytest

from app.agent.config.settings import Settings
from memory.store.author import tilde_home


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("/home/ann/src/app.py", "~/src/app.py"),
        ("see /home/ann.", "see ~."),
        ("`/home/ann/x` and /home/ann/y", "`~/x` and ~/y"),
        ("/home/anna/src", "/home/anna/src"),
        ("/home/ann.bak/x", "/home/ann.bak/x"),
        ("/mnt/home/ann/src", "/mnt/home/ann/src"),
        ("nothing here", "nothing here"),
    ],
)
def test_tilde_home(monkeypatch: pytest.MonkeyPatch, text: str, want: str) -> None:
    monkeypatch.setenv("HOME", "/home/ann")
    assert tilde_home(text) == want


def test_a_root_home_is_never_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/")
    assert tilde_home("/usr/bin/env") == "/usr/bin/env"


@pytest.mark.parametrize(
    "bad", ["--upload-pack=touch /tmp/x", "ext::sh -c 'touch x'", "fd::3", "a b", "x\x1b[31m"]
)
def test_a_remote_that_could_run_something_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="user_memory_remote"):
        Settings(user_memory_remote=bad)


@pytest.mark.parametrize(
    "good",
    ["/srv/memory.git", "git@example.com:ann/memory.git", "https://example.com/m.git", "file:///srv/m.git"],
)
def test_urls_and_paths_are_kept(good: str) -> None:
    assert Settings(user_memory_remote=f" {good} ").user_memory_remote == good


def test_the_extraction_prompt_says_the_project_store_is_pushed_to_everyone() -> None:
    from memory.extract.prompt import EXTRACTION_SYSTEM

    text = " ".join(EXTRACTION_SYSTEM.split())
    assert "pushed to everyone who clones it" in text and "nothing private to this user" in text

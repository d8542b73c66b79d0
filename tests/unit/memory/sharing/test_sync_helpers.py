"""The pure parts of ``memory sync`` (memory/sharing/sync.py): remote checks, messages, lost cards."""

from __future__ import annotations

import pytest

from memory.sharing.sync import (
    commit_message,
    is_card_path,
    lost_cards,
    remote_problem,
    short_remote,
    synced_ref,
)
from memory.text.conflict_sides import side_names


@pytest.mark.parametrize(
    "remote", ["-uupload-pack=touch x", "ext::sh -c x", "fd::3", "a b", "x\x1b[31m", "", "  "]
)
def test_hostile_or_empty_remotes_are_refused(remote: str) -> None:
    assert remote_problem(remote) is not None


@pytest.mark.parametrize(
    "remote",
    [
        "/srv/memory.git",
        "git@host:me/memory.git",
        "https://host/me/memory.git",
        "ssh://host:2222/memory.git",
        "file:///srv/m.git",
    ],
)
def test_ordinary_remotes_pass(remote: str) -> None:
    assert remote_problem(remote) is None


def test_a_remote_in_a_message_has_no_password_and_one_line() -> None:
    shown = short_remote("https://me:hunter2secret@host/m.git")
    assert "hunter2secret" not in shown and "me:" in shown and "@host/m.git" in shown
    assert len(short_remote("/x" * 200, 40)) == 40


def test_synced_refs_are_per_remote() -> None:
    assert synced_ref("/a.git") != synced_ref("/b.git")
    assert synced_ref("/a.git") == synced_ref("/a.git")
    assert synced_ref("/a.git").startswith("refs/pseudoclaude/synced/")


def test_card_paths() -> None:
    assert is_card_path("user_preference_tabs.md")
    for path in ("MEMORY.md", ".gitignore", ".trash/x.md", "sub/x.md", "notes.txt", ".hidden.md"):
        assert not is_card_path(path), path


def test_commit_message_counts_cards_and_lists_them() -> None:
    msg = commit_message(["b.md", "MEMORY.md", "a.md", ".gitignore"], "lap\ntop")
    assert msg.splitlines()[0] == "PseudoClaude: 2 cards changed on lap top"
    assert msg.splitlines()[2:] == ["- a.md", "- b.md"]
    assert commit_message(["x.md"], "h").startswith("PseudoClaude: 1 card changed on h\n")
    assert commit_message(["MEMORY.md"], "").startswith("PseudoClaude: store files updated on this machine")


def test_lost_cards_are_those_synced_before_still_here_and_missing_from_the_remote() -> None:
    synced = ["a.md", "b.md", "c.md", "MEMORY.md", ".gitignore"]
    remote = ["a.md", "MEMORY.md"]
    # c.md was deleted here too: not lost. MEMORY.md and the git files are no cards.
    assert lost_cards(synced, remote, {"a.md", "b.md", "d.md"}) == ["b.md"]
    assert lost_cards(synced, synced, {"a.md", "b.md", "c.md"}) == []


@pytest.mark.parametrize(
    ("ours", "theirs", "want"),
    [
        # What the sync writes now: this machine above the markers' =======, the remote below.
        (
            "this machine laptop",
            "the remote /srv/m.git",
            [("this machine", "m", "laptop"), ("the remote", "r", "/srv/m.git")],
        ),
        # What it wrote before: the remote above (git's "ours" during a rebase).
        (
            "remote /srv/m.git",
            "this machine laptop",
            [("the remote", "r", "/srv/m.git"), ("this machine", "m", "laptop")],
        ),
        # Any other conflict keeps git's names.
        ("HEAD", "feature/ninja", [("ours", "o", "HEAD"), ("theirs", "t", "feature/ninja")]),
        (
            "this machine a",
            "this machine b",
            [("ours", "o", "this machine a"), ("theirs", "t", "this machine b")],
        ),
    ],
)
def test_a_conflicts_versions_are_named_by_machine_whichever_side_they_are_on(
    ours: str, theirs: str, want: list[tuple[str, str, str]]
) -> None:
    assert [(n.name, n.key, n.detail) for n in side_names(ours, theirs)] == want

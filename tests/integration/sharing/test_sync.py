"""``memory sync`` with real git: two homes (two machines) and a local bare remote.

Each machine is its own ``PSEUDOCLAUDE_HOME``; the CLI runs as its own process, except where a
test needs to act between a sync's steps (then in-process, with the same function)."""

from __future__ import annotations

import json
import shlex
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memory.constants import MANUAL_SOURCE
from memory.extract.parser import parse_and_validate
from memory.sharing import sync as sync_mod
from memory.sharing.conflict_rebase import ConflictRebase
from memory.sharing.git import GitCancel
from memory.sharing.sync import SyncResult, short_remote, sync_user_store
from memory.store.stores import MemoryStores
from tests.support.clitools import Result, run_cli
from tests.support.gittools import alive, clone, commit_all, git, git_run, hanging_ssh, set_user, started

pytestmark = pytest.mark.timeout(180)


class Machine:
    """One home with its user store, syncing with ``remote``."""

    def __init__(self, tmp_path: Path, name: str, remote: Path) -> None:
        self.home = tmp_path / name
        self.ws = tmp_path / f"{name}-ws"
        self.ws.mkdir()
        self.remote = remote
        self.store = self.home / "memory"

    def cli(self, *args: str, stdin: str | None = None, remote: str | None = None) -> Result:
        return run_cli(
            None,
            self.ws,
            *args,
            stdin=stdin,
            PSEUDOCLAUDE_HOME=str(self.home),
            PSEUDOCLAUDE_USER_MEMORY_REMOTE=str(self.remote) if remote is None else remote,
        )

    def apply(self, *ops: dict[str, Any]) -> list[str]:
        """A person's ops, as ``memory apply`` applies them (in-process: the CLI is tested elsewhere)."""
        parsed = parse_and_validate(json.dumps(list(ops)))
        result = self.stores().apply(parsed.ops, source=MANUAL_SOURCE, label="memory apply")
        assert not result.rejected and not result.conflicts, result
        return [a.filename for a in result.applied]

    def add(self, title: str, content: str) -> str:
        return self.apply(
            {
                "action": "create",
                "level": "user",
                "type": "user_preference",
                "title": title,
                "content": content,
            }
        )[0]

    def update(self, filename: str, content: str) -> None:
        self.apply({"action": "update", "level": "user", "filename": filename, "content": content})

    def delete(self, filename: str) -> None:
        self.apply({"action": "delete", "level": "user", "filename": filename})

    def sync(self) -> Result:
        return self.cli("memory", "sync")

    def synced(self, cli: bool = False) -> str:
        """One sync that must succeed; its line. In-process unless ``cli`` (the same function)."""
        if not cli:
            result = sync_user_store(self.stores(), str(self.remote))
            assert result.ok, result.line
            return result.line + "\n"
        res = self.sync()
        assert res.code == 0, res.err
        assert res.err == "" and res.out.startswith("memory sync: in step with "), res
        return res.out

    def files(self) -> dict[str, bytes]:
        """The store as a person sees it: every file but git's own folder."""
        return {p.name: p.read_bytes() for p in sorted(self.store.iterdir()) if p.is_file()}

    def stores(self) -> MemoryStores:
        return MemoryStores(self.ws, self.home)


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    return bare


def remote_head(remote: Path) -> str:
    res = git_run(remote, "rev-parse", "--verify", "-q", "refs/heads/main")
    return res.stdout.strip()


def remote_cards(remote: Path) -> list[str]:
    names = git(remote, "ls-tree", "--name-only", "main").split()
    return sorted(n for n in names if n.endswith(".md") and n != "MEMORY.md")


def body(machine: Machine, name: str) -> str:
    return (machine.store / name).read_text()


def marker_lines_added(repo: Path) -> list[str]:
    """Every conflict-marker line any commit of ``repo``'s main added."""
    patch = git(repo, "log", "-p", "--format=commit %H", "main")
    return [ln for ln in patch.splitlines() if ln.startswith(("+<<<<<<<", "+=======", "+>>>>>>>"))]


def healthy(machine: Machine) -> None:
    res = machine.cli("memory", "doctor")
    assert res.code == 0, res.out + res.err


def test_two_machines_converge_both_ways(tmp_path: Path, remote: Path) -> None:
    a, b = Machine(tmp_path, "a", remote), Machine(tmp_path, "b", remote)
    tabs = a.add("Likes tabs", "Indent with tabs.")
    vim = a.add("Uses vim", "Edits in vim.")
    assert "1 commit pushed" in a.synced(cli=True)
    assert remote_cards(remote) == sorted([tabs, vim])
    assert "2 cards pulled" in b.synced(cli=True)
    assert b.files() == a.files()
    b.update(vim, "Edits in neovim now.")
    short = b.add("Short answers", "Keep answers short.")
    b.synced()
    out = a.synced(cli=True)
    assert "2 cards pulled" in out and "0 commits pushed" in out
    assert a.files() == b.files()
    assert "Edits in neovim now." in body(a, vim) and (a.store / short).is_file()
    assert (a.store / "MEMORY.md").read_text().count("\n") == 3
    assert remote_cards(remote) == sorted([tabs, vim, short])
    for m in (a, b):
        healthy(m)
        assert m.synced(cli=True).endswith("(0 cards pulled, 0 commits pushed)\n")


def test_diverged_machines_keep_every_card(tmp_path: Path, remote: Path) -> None:
    a, b = Machine(tmp_path, "a", remote), Machine(tmp_path, "b", remote)
    # First syncs of two machines that both have cards: unrelated histories.
    x = a.add("Card from A", "a")
    y = b.add("Card from B", "b")
    a.synced()
    b.synced()
    a.synced()
    # Then diverged again, both after a sync.
    z = a.add("Second from A", "a2")
    w = b.add("Second from B", "b2")
    b.synced()
    a.synced()
    b.synced()
    everyone = sorted([x, y, z, w])
    assert remote_cards(remote) == everyone
    assert a.files() == b.files()
    assert sorted(n for n in a.files() if n.endswith(".md") and n != "MEMORY.md") == everyone
    for m in (a, b):
        healthy(m)
        listed = m.cli("memory", "index").out
        assert all(listed.count(f"({n})") == 1 for n in everyone), listed


def test_a_card_edited_on_both_machines_is_conflicted_until_a_person_resolves_it(
    tmp_path: Path, remote: Path
) -> None:
    a, b = Machine(tmp_path, "a", remote), Machine(tmp_path, "b", remote)
    card = a.add("Editor choice", "Uses vim.")
    a.synced()
    b.synced()
    a.update(card, "Uses emacs, says A.")
    b.update(card, "Uses helix, says B.")
    a.synced()
    before = remote_head(remote)
    res = b.sync()
    assert res.code == 1 and res.out == ""
    assert res.err.count("\n") == 1 and "conflicted" in res.err and card in res.err, res.err
    assert remote_head(remote) == before  # nothing pushed while conflicted
    text = body(b, card)
    assert "<<<<<<< " in text and "Uses emacs, says A." in text and "Uses helix, says B." in text
    index = b.cli("memory", "index")
    assert card not in index.out and "Editor choice" not in index.out
    assert "conflicted" in index.err
    assert b.cli("memory", "doctor").code == 1
    # Still conflicted: a second sync still pushes nothing.
    assert b.sync().code == 1 and remote_head(remote) == before
    b.update(card, "Uses helix; A agrees.")
    b.synced()
    a.synced()
    assert a.files() == b.files()
    assert "<<<<<<<" not in body(a, card) and "Uses helix; A agrees." in body(a, card)
    # The commit the rebase left the markers in stayed on B: no commit the remote has holds one.
    assert marker_lines_added(remote) == []
    for m in (a, b):
        healthy(m)
        assert "Editor choice" in m.cli("memory", "index").out


def test_changed_on_one_machine_and_deleted_on_the_other_keeps_the_change(
    tmp_path: Path, remote: Path
) -> None:
    a, b = Machine(tmp_path, "a", remote), Machine(tmp_path, "b", remote)
    kept_by_a = a.add("Edited on A", "v1")
    kept_by_b = a.add("Edited on B", "v1")
    a.synced()
    b.synced()
    a.update(kept_by_a, "v2 from A")
    b.delete(kept_by_a)
    b.update(kept_by_b, "v2 from B")
    a.delete(kept_by_b)
    b.synced()
    a.synced()
    b.synced()
    assert a.files() == b.files()
    assert "v2 from A" in body(a, kept_by_a) and "v2 from B" in body(a, kept_by_b)
    assert remote_cards(remote) == sorted([kept_by_a, kept_by_b])


def test_a_deletion_on_another_machine_syncs(tmp_path: Path, remote: Path) -> None:
    a, b = Machine(tmp_path, "a", remote), Machine(tmp_path, "b", remote)
    gone = a.add("Old habit", "x")
    stays = a.add("Good habit", "y")
    a.synced()
    b.synced()
    b.delete(gone)
    b.synced()
    assert "1 card pulled" in a.synced()
    assert not (a.store / gone).exists() and (a.store / stays).exists()


def test_an_unreachable_remote_fails_in_one_line_and_changes_nothing(tmp_path: Path, remote: Path) -> None:
    a = Machine(tmp_path, "a", remote)
    a.add("Kept", "k")
    a.synced()
    a.add("Not pushed yet", "n")
    before = a.files()
    missing = str(tmp_path / "no-such-remote.git")
    res = a.cli("memory", "sync", remote=missing)
    assert res.code == 1 and res.out == ""
    assert res.err.count("\n") == 1 and res.err.startswith(
        f"pseudoclaude: memory sync: cannot reach {short_remote(missing)}: "
    )
    assert a.files() == before
    # A machine's first sync, offline: its cards are all still there.
    c = Machine(tmp_path, "c", remote)
    first = c.add("Offline card", "o")
    cards_before = {n: v for n, v in c.files().items() if n.endswith(".md")}
    res = c.cli("memory", "sync", remote=missing)
    assert res.code == 1 and res.err.count("\n") == 1
    assert {n: v for n, v in c.files().items() if n.endswith(".md")} == cards_before and first in cards_before
    # Back online: the card made offline is pushed.
    assert "1 commit pushed" in a.synced(cli=True)


def test_a_remote_rewritten_to_drop_cards_is_refused(tmp_path: Path, remote: Path) -> None:
    a, b = Machine(tmp_path, "a", remote), Machine(tmp_path, "b", remote)
    first = a.add("First", "1")
    a.synced()
    second = a.add("Second", "2")
    third = a.add("Third", "3")
    a.synced()
    b.synced()
    scratch = clone(remote, tmp_path / "scratch", "Mallory")
    git(scratch, "reset", "-q", "--hard", "HEAD~1")
    (scratch / "new.md").write_text("---\ntitle: New\ntype: user_preference\n---\nnew\n")
    commit_all(scratch, "rewritten")
    git(scratch, "push", "-q", "--force", "origin", "main")
    rewritten = remote_head(remote)
    before = a.files()
    res = a.sync()
    assert res.code == 1 and res.err.count("\n") == 1
    assert "refused" in res.err and "lost 2 cards" in res.err and second in res.err and third in res.err
    assert "history was rewritten" in res.err
    assert a.files() == before and remote_head(remote) == rewritten
    # Refused again on the next try, and on the other machine too: never mirrored.
    assert a.sync().code == 1 and b.sync().code == 1
    assert (b.store / second).exists() and remote_head(remote) == rewritten
    assert remote_cards(remote) == sorted([first, "new.md"])


def local_log(machine: Machine) -> str:
    """The user store's branch as ``memory log user`` reads it: every commit id and subject."""
    return git(machine.store, "log", "--format=%H %s", "main")


def rewrite_remote(tmp_path: Path, remote: Path, card: str, new_body: str) -> None:
    """Another machine resets the remote one commit back, changes ``card``'s body, force-pushes."""
    scratch = clone(remote, tmp_path / "scratch", "Mallory")
    git(scratch, "reset", "-q", "--hard", "HEAD~1")
    path = scratch / card
    path.write_text(path.read_text().replace(path.read_text().split("---\n")[-1], new_body + "\n"))
    commit_all(scratch, "rewritten")
    git(scratch, "push", "-q", "--force", "origin", "main")


def test_a_remote_rewritten_to_change_a_card_is_refused_and_git_push_force_puts_ours_back(
    tmp_path: Path, remote: Path
) -> None:
    a, b = Machine(tmp_path, "a", remote), Machine(tmp_path, "b", remote)
    editor = a.add("Editor", "Uses vim.")
    shell = a.add("Shell", "Uses zsh.")
    a.synced()
    a.update(shell, "Uses zsh 5.")
    a.synced()
    b.synced()
    # Back to before the shell's update (no card lost), the editor's body changed.
    rewrite_remote(tmp_path, remote, editor, "Uses nano, rewritten.")
    rewritten = remote_head(remote)
    files, log = a.files(), local_log(a)
    res = a.sync()
    assert res.code == 1 and res.out == "" and res.err.count("\n") == 1, res
    assert "refused" in res.err and "history was rewritten" in res.err
    assert f"taking it would change 2 cards here ({editor}, {shell}). Nothing was changed here" in res.err
    assert "memory sync --accept-rewrite" in res.err
    # Nothing here moved: the files, the branch's commits (memory log user), the remote.
    assert a.files() == files and local_log(a) == log and remote_head(remote) == rewritten
    assert "Uses vim." in body(a, editor) and "Uses zsh 5." in body(a, shell)
    commits = [ln for ln in a.cli("memory", "log", "user").out.splitlines() if " user store commit " in ln]
    assert len(commits) == 2
    # Refused again, and on the other machine too.
    assert a.sync().code == 1 and b.sync().code == 1 and remote_head(remote) == rewritten
    # The line's other way out: this machine's history pushed back over the rewrite.
    command = res.err.split("`")[3]
    assert command.startswith("git -C ") and command.endswith(" push --force origin main")
    git(tmp_path, *shlex.split(command)[1:])
    assert a.synced(cli=True).endswith("(0 cards pulled, 0 commits pushed)\n")
    assert b.synced(cli=True).endswith("(0 cards pulled, 0 commits pushed)\n")
    assert "Uses vim." in body(b, editor) and local_log(a) == log


def test_accept_rewrite_takes_the_rewritten_remote_with_this_machines_changes_replayed(
    tmp_path: Path, remote: Path
) -> None:
    a = Machine(tmp_path, "a", remote)
    editor = a.add("Editor", "Uses vim.")
    shell = a.add("Shell", "Uses zsh.")
    a.synced()
    a.update(shell, "Uses zsh 5.")
    a.synced()
    rewrite_remote(tmp_path, remote, editor, "Uses nano, rewritten.")
    later = a.add("Later", "Made after the rewrite.")
    assert a.sync().code == 1 and (a.store / later).exists() and "Uses vim." in body(a, editor)
    res = a.cli("memory", "sync", "--accept-rewrite")
    assert res.code == 0 and res.out.startswith("memory sync: in step with "), res
    # The remote's history as it is now, this machine's card made since on top of it.
    assert "Uses nano, rewritten." in body(a, editor) and "Uses zsh 5." not in body(a, shell)
    assert (a.store / later).exists() and remote_cards(remote) == sorted([editor, later, shell])
    # From then on an ordinary sync, without the flag.
    a.synced(cli=True)


def test_a_reworded_remote_history_is_refused_too(tmp_path: Path, remote: Path) -> None:
    a = Machine(tmp_path, "a", remote)
    first = a.add("First", "1")
    a.synced()
    second = a.add("Second", "2")
    a.synced()
    scratch = clone(remote, tmp_path / "scratch", "Ann")
    git(scratch, "commit", "-q", "--amend", "-m", "reworded")
    git(scratch, "push", "-q", "--force", "origin", "main")
    third = a.add("Third", "3")
    result = sync_user_store(a.stores(), str(remote))
    assert not result.ok and "history was rewritten" in result.line and "no card differs" in result.line
    assert remote_cards(remote) == sorted([first, second])
    result = sync_user_store(a.stores(), str(remote), accept_rewrite=True)
    assert result.ok, result.line
    assert remote_cards(remote) == sorted([first, second, third])


def test_without_a_remote_sync_says_how_to_set_one(tmp_path: Path, remote: Path) -> None:
    a = Machine(tmp_path, "a", remote)
    res = a.cli("memory", "sync", remote="")
    assert res.code == 1 and res.out == ""
    assert res.err == (
        f"pseudoclaude: no user_memory_remote is set in {a.home / 'config.toml'}; set it to a git "
        "URL or a local bare repository\n"
    )
    # From config.toml it works like the environment.
    a.home.mkdir(exist_ok=True)
    (a.home / "config.toml").write_text(f"user_memory_remote = {json.dumps(str(remote))}\n")
    a.add("Via config", "c")
    assert a.cli("memory", "sync", remote="").code == 0
    assert len(remote_cards(remote)) == 1


@pytest.mark.parametrize(
    "hostile", ["-uupload-pack=touch%20pc-owned", "ext::sh%20-c%20touch%20pc-owned", "fd::3"]
)
def test_a_hostile_remote_is_refused_by_the_settings(tmp_path: Path, remote: Path, hostile: str) -> None:
    a = Machine(tmp_path, "a", remote)
    res = a.cli("memory", "sync", remote=hostile)
    assert res.code == 2 and res.out == ""
    assert res.err.count("\n") == 1 and "PSEUDOCLAUDE_USER_MEMORY_REMOTE" in res.err
    assert not (a.store / ".git").exists()
    # The sync itself refuses it too, whoever calls it.
    result = sync_user_store(a.stores(), hostile)
    assert not result.ok and result.line.startswith("memory sync: refused") and "\n" not in result.line
    assert not (a.store / ".git").exists()


HALF_RESOLVED = "Uses helix, says B.\n=======\nUses emacs, says A.\n>>>>>>> the remote\n"


def test_a_card_with_conflict_marker_lines_is_never_committed(tmp_path: Path, remote: Path) -> None:
    a = Machine(tmp_path, "a", remote)
    card = a.add("Editor choice", "Uses vim.")
    ok = a.add("Shell", "Uses zsh.")
    a.synced()
    pushed = remote_head(remote)
    # Half resolved by hand: the opening marker gone, so no longer a whole conflict hunk.
    path = a.store / card
    path.write_text(path.read_text().replace("Uses vim.\n", HALF_RESOLVED))
    a.update(ok, "Uses fish.")
    head, files = git(a.store, "rev-parse", "HEAD"), a.files()
    res = a.sync()
    assert res.code == 1 and res.out == "" and res.err.count("\n") == 1, res
    assert "refused to commit 1 card with conflict-marker lines" in res.err and card in res.err
    assert ok not in res.err
    assert git(a.store, "rev-parse", "HEAD") == head and a.files() == files and remote_head(remote) == pushed
    path.write_text(path.read_text().replace(HALF_RESOLVED, "Uses helix.\n"))
    a.synced(cli=True)
    assert marker_lines_added(remote) == [] and "Uses fish." in git(remote, "show", f"main:{ok}")


def test_a_card_committed_with_conflict_marker_lines_is_never_pushed(tmp_path: Path, remote: Path) -> None:
    a = Machine(tmp_path, "a", remote)
    card = a.add("Editor choice", "Uses vim.")
    a.synced()
    pushed = remote_head(remote)
    path = a.store / card
    path.write_text(path.read_text().replace("Uses vim.\n", HALF_RESOLVED))
    commit_all(a.store, "by hand, with git")
    res = a.sync()
    assert res.code == 1 and res.err.count("\n") == 1, res
    assert "refused to push: 1 card committed with conflict-marker lines" in res.err and card in res.err
    assert remote_head(remote) == pushed and marker_lines_added(remote) == []
    # Resolved: the commit that held the markers is not pushed, one commit of the result is.
    path.write_text(path.read_text().replace(HALF_RESOLVED, "Uses helix.\n"))
    assert "1 commit pushed" in a.synced(cli=True)
    assert marker_lines_added(remote) == [] and "Uses helix." in git(remote, "show", f"main:{card}")
    assert git(a.store, "rev-parse", "HEAD").strip() == remote_head(remote)


# -- in-process: acting between a sync's steps -----------------------------------------------------


def test_a_push_rejected_because_the_remote_moved_is_retried_once(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = Machine(tmp_path, "a", remote), Machine(tmp_path, "b", remote)
    a.add("From A", "a")
    a.synced()
    b.synced()
    late = b.add("Pushed meanwhile", "b")
    mine = a.add("Mine", "m")
    original = sync_mod._Sync.integrate_locked
    calls: list[int] = []

    def integrate_then_other_machine_pushes(self: Any, *args: Any) -> tuple[str, ...]:
        out = original(self, *args)
        calls.append(1)
        if len(calls) == 1:
            assert b.sync().code == 0  # b pushes between a's fetch and a's push
        return out

    monkeypatch.setattr(sync_mod._Sync, "integrate_locked", integrate_then_other_machine_pushes)
    result = sync_user_store(a.stores(), str(remote))
    assert result.ok, result.line
    assert len(calls) == 2 and late in result.pulled and result.pushed >= 1
    assert remote_cards(remote) == sorted([*(n for n in a.files() if n.startswith("user_"))])
    assert mine in remote_cards(remote) and late in remote_cards(remote)


def test_a_rebase_that_fails_midway_is_aborted_and_loses_nothing(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = Machine(tmp_path, "a", remote), Machine(tmp_path, "b", remote)
    card = a.add("Shared", "v1")
    a.synced()
    b.synced()
    a.update(card, "A's version")
    extra = a.add("A's extra", "x")
    b.update(card, "B's version")
    b.synced()
    before = a.files()

    def broken(self: Any, path: str, stages: Any) -> None:
        raise OSError(28, "No space left on device", path)

    monkeypatch.setattr(ConflictRebase, "resolve", broken)
    result = sync_user_store(a.stores(), str(remote))
    assert not result.ok and "No space left on device" in result.line and "\n" not in result.line
    store = a.store
    assert not (store / ".git" / "rebase-merge").exists()
    now = a.files()
    assert "A's version" in now[card].decode() and extra in now
    assert {n: v for n, v in now.items() if n != "MEMORY.md"} == {
        n: v for n, v in before.items() if n != "MEMORY.md"
    }
    monkeypatch.undo()
    assert a.sync().code == 1  # now it conflicts, as it should, with both versions
    assert "B's version" in body(a, card) and "A's version" in body(a, card)


def test_a_held_store_lock_fails_the_sync_in_one_line(tmp_path: Path, remote: Path) -> None:
    a = Machine(tmp_path, "a", remote)
    a.add("Card", "c")
    stores = a.stores()
    with stores.locked():
        result = sync_user_store(stores, str(remote), timeout=0.2)
    assert result == SyncResult(ok=False, line=result.line)
    assert "locked" in result.line and "\n" not in result.line
    assert remote_head(remote) == ""


def test_commits_carry_the_persons_identity_or_a_fallback(tmp_path: Path, remote: Path) -> None:
    a = Machine(tmp_path, "a", remote)
    card = a.add("Card", "c")
    a.synced()
    log = git(a.store, "log", "-1", "--format=%an <%ae>%n%s%n%b")
    assert log.startswith("PseudoClaude <pseudoclaude@localhost>\nPseudoClaude: 1 card changed on ")
    assert f"- {card}" in log
    set_user(a.store, "Ann Example")
    a.update(card, "c2")
    a.synced()
    assert (
        git(a.store, "log", "-1", "--format=%an <%ae>").strip() == "Ann Example <ann.example@example.invalid>"
    )


def test_a_sync_that_died_mid_rebase_is_undone_first_unless_cards_changed_since(
    tmp_path: Path, remote: Path
) -> None:
    a, b = Machine(tmp_path, "a", remote), Machine(tmp_path, "b", remote)
    card = a.add("Shared", "v1")
    a.synced()
    b.synced()
    a.update(card, "A's version")
    b.update(card, "B's version")
    b.synced()
    # What a killed sync leaves: the local commit, fetched remote, a rebase stopped on a conflict.
    git(a.store, "add", "-A")
    git(a.store, "commit", "-q", "-m", "local")
    git(a.store, "fetch", "-q", "origin")
    assert git_run(a.store, "rebase", "origin/main").returncode != 0
    assert (a.store / ".git" / "rebase-merge").is_dir()
    # A card written into that half-done tree (the app kept running): only git can sort it out.
    (a.store / "late.md").write_text("---\ntitle: Late\ntype: user_preference\n---\nlate\n")
    result = sync_user_store(a.stores(), str(remote))
    assert not result.ok and "interrupted" in result.line and (a.store / "late.md").exists()
    assert (a.store / ".git" / "rebase-merge").is_dir()
    (a.store / "late.md").unlink()
    # Nothing written since: the stale rebase is aborted and this sync does it properly.
    result = sync_user_store(a.stores(), str(remote))
    assert not result.ok and result.conflicted == (card,), result
    assert not (a.store / ".git" / "rebase-merge").exists()
    assert "A's version" in body(a, card) and "B's version" in body(a, card)


def test_memory_log_user_shows_the_user_stores_git_history(tmp_path: Path, remote: Path) -> None:
    a, b = Machine(tmp_path, "a", remote), Machine(tmp_path, "b", remote)
    a.add("Likes tabs", "Indent with tabs.")
    a.synced()
    b.add("Short answers", "Keep answers short.")
    b.synced()
    a.synced()
    res = a.cli("memory", "log", "user")
    assert res.code == 0, res.err
    commits = [ln for ln in res.out.splitlines() if " user store commit " in ln]
    # Both machines' sync commits, newest first, next to this machine's own batch.
    assert len(commits) >= 2 and "PseudoClaude: 1 card changed on" in commits[0]
    assert any("batch" in ln and "(manual)" in ln for ln in res.out.splitlines())


# -- a remote whose transport hangs ------------------------------------------------------------------

UNREACHABLE = "ssh://nohost.invalid/x.git"  # its "ssh" is the test's script: no network


def gone(pids: list[int], timeout: float = 5.0) -> list[int]:
    """The processes of ``pids`` still alive after at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def test_a_remote_that_hangs_is_cut_off_with_every_process_git_started(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = hanging_ssh(tmp_path, monkeypatch)
    a = Machine(tmp_path, "a", remote)
    a.add("Kept", "k")
    t0 = time.monotonic()
    result = sync_user_store(a.stores(), UNREACHABLE, timeout=1.0)
    assert time.monotonic() - t0 < 10
    assert not result.ok and "did not finish within 1 s" in result.line and "\n" not in result.line
    ssh = started(pids)
    assert len(ssh) == 2  # the fake ssh and the child it started
    assert gone(ssh) == []


def test_a_cancelled_sync_kills_the_git_it_runs_and_its_ssh(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = hanging_ssh(tmp_path, monkeypatch)
    a = Machine(tmp_path, "a", remote)
    a.add("Kept", "k")
    cancel = GitCancel()
    out: list[SyncResult] = []
    worker = threading.Thread(
        target=lambda: out.append(sync_user_store(a.stores(), UNREACHABLE, cancel=cancel))
    )
    worker.start()
    deadline = time.monotonic() + 30
    while len(started(pids)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    ssh = started(pids)
    assert len(ssh) == 2 and all(alive(p) for p in ssh)
    cancel.cancel()
    worker.join(5)
    assert not worker.is_alive()
    [result] = out
    assert not result.ok and "cancelled" in result.line
    assert gone(ssh) == []

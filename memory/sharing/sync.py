"""``memory sync``: the user store as a git repository kept in step with ``user_memory_remote``.

One sync: commit this machine's changes, fetch, refuse a remote whose history was rewritten (it
no longer holds the commit this machine last synced with) unless the person said to take it,
rebase the local commits onto the remote (a card changed on both machines is left conflicted,
with both versions, for a person), rebuild ``MEMORY.md``, push, and record the remote commit it
is now in step with. No card with conflict-marker lines is committed, and no commit holding
one is pushed. The store's lock is held while the work tree changes, never over the network.
Nothing here raises for a git or I/O failure: the result says what happened in one line, and
every local card is in a local commit before anything else runs.

The repository's git runs are memory/sharing/sync_repo.py's (``SyncRepo``); the rebase that
keeps both versions of a conflicted card is memory/sharing/conflict_rebase.py's.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import filelock

from memory.constants import INDEX_FILE, Level
from memory.sharing.conflict_rebase import ConflictRebase
from memory.sharing.git import GitCancel, GitError, git_available
from memory.sharing.sync_repo import BRANCH, MARKER_REGEX, REMOTE_REF, SyncFailed, SyncRepo, git_reason
from memory.store import journal
from memory.store.locks import file_lock
from memory.store.store import StoreError
from memory.store.stores import MemoryStores
from memory.store.transaction import TransactionError, rebuild_indexes_locked
from memory.text.lines import one_line
from memory.text.redact import redact_url_credentials

__all__ = [
    "SYNCED_REFS",
    "SyncResult",
    "commit_message",
    "is_card_path",
    "lost_cards",
    "remote_problem",
    "short_remote",
    "sync_user_store",
    "synced_ref",
]

# The remote commit of the last sync that integrated it, per remote URL (a new remote is no
# rewritten old one): a later remote that does not descend from it had its history rewritten
# (a force-push), and what it lost is measured against it.
SYNCED_REFS = "refs/pseudoclaude/synced"
_UNMERGED = ("UU", "AA", "DU", "UD", "AU", "UA", "DD")
_CARD_SPECS = (":(glob)*.md", ":(exclude)MEMORY.md")


@dataclass(frozen=True)
class SyncResult:
    """What one sync did. ``line``: one line for the panel and stderr (what happened, or why it
    failed); ``ok`` False when it failed or was refused (retried later; nothing local is lost)."""

    ok: bool
    line: str
    pulled: tuple[str, ...] = ()  # card filenames that arrived or changed from the remote
    pushed: int = 0  # local commits pushed
    conflicted: tuple[str, ...] = field(default=())  # cards left conflicted by the rebase


# -- pure helpers --------------------------------------------------------------------------------


def remote_problem(remote: str) -> str | None:
    """Why ``remote`` must not be handed to git, or None (the settings check the same; this is
    the door every caller passes)."""
    if not remote.strip():
        return "no remote is set"
    if remote.startswith("-"):
        return "a remote must be a git URL or a path, not an option"
    if not remote.isprintable() or any(c.isspace() for c in remote):
        return "a remote is one git URL or path, without spaces or control characters"
    if "::" in remote:
        return "remote helpers (`transport::address`) are not allowed"
    return None


def synced_ref(remote: str) -> str:
    """The ref recording the last commit of ``remote`` a sync integrated."""
    return f"{SYNCED_REFS}/{hashlib.sha256(remote.encode('utf-8', 'surrogateescape')).hexdigest()[:16]}"


def short_remote(remote: str, width: int = 160) -> str:
    """The remote for a message: a URL's password redacted, one line, shortened."""
    return one_line(redact_url_credentials(remote), width)


def is_card_path(path: str) -> bool:
    """A card file of the store, as git names it (top level, ``*.md``, not ``MEMORY.md``)."""
    return "/" not in path and path.endswith(".md") and path != INDEX_FILE and not path.startswith(".")


def commit_message(paths: list[str], host: str) -> str:
    """The message of a commit of local changes: a subject counting the cards, their names below."""
    cards = sorted(p for p in paths if is_card_path(p))
    host = one_line(host, 60) or "this machine"
    if not cards:
        return f"PseudoClaude: store files updated on {host}\n"
    noun = "card" if len(cards) == 1 else "cards"
    body = "".join(f"- {one_line(name, 120)}\n" for name in cards[:200])
    more = f"- … and {len(cards) - 200} more\n" if len(cards) > 200 else ""
    return f"PseudoClaude: {len(cards)} {noun} changed on {host}\n\n{body}{more}"


def lost_cards(synced_tree: list[str], remote_tree: list[str], local: set[str]) -> list[str]:
    """Cards the last synced remote commit had, this machine still has, and the remote lost."""
    remote = set(remote_tree)
    return sorted(p for p in synced_tree if is_card_path(p) and p in local and p not in remote)


def _names(names: list[str] | tuple[str, ...], limit: int = 5) -> str:
    shown = ", ".join(one_line(n, 60) for n in names[:limit])
    return shown + (", …" if len(names) > limit else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _host() -> str:
    try:
        return socket.gethostname()
    except OSError:
        return ""


# -- one sync ------------------------------------------------------------------------------------


class _Sync:
    def __init__(
        self,
        stores: MemoryStores,
        remote: str,
        timeout: float,
        *,
        accept_rewrite: bool = False,
        cancel: GitCancel | None = None,
    ) -> None:
        self.stores = stores
        self.remote = remote
        self.short = short_remote(remote)
        self.synced = synced_ref(remote)
        self.timeout = timeout
        self.accept_rewrite = accept_rewrite
        self.repo = SyncRepo(stores.user.dir, timeout, cancel)
        self.host = _host()
        self.pulled: set[str] = set()
        self.pushed = 0

    def run(self) -> SyncResult:
        with self.stores.locked(self.timeout):
            self.prepare_locked()
        remote_head = self.fetch()
        base = self.check_rewrite(remote_head)
        with self.stores.locked(self.timeout):
            conflicted = self.integrate_locked(remote_head, base)
        if conflicted:
            raise SyncFailed(
                f"memory sync: {_plural(len(conflicted), 'card')} changed on two machines "
                f"{'is' if len(conflicted) == 1 else 'are'} conflicted ({_names(conflicted)}); "
                f"resolve {'it' if len(conflicted) == 1 else 'them'}, the next sync pushes",
                conflicted,
                tuple(sorted(self.pulled)),
            )
        self.push(remote_head)
        parts = [f"{_plural(len(self.pulled), 'card')} pulled", f"{_plural(self.pushed, 'commit')} pushed"]
        return SyncResult(
            ok=True,
            line=f"memory sync: in step with {self.short} ({', '.join(parts)})",
            pulled=tuple(sorted(self.pulled)),
            pushed=self.pushed,
        )

    # -- local ---------------------------------------------------------------------------------

    def prepare_locked(self) -> None:
        """The store folder as a repository on ``main`` with ``origin`` = the remote, its git
        files and index written, and every local change committed."""
        problem = self.stores.user.folder_problem()
        if problem is not None:
            raise SyncFailed(f"memory sync: {problem}")
        d = self.repo.dir
        d.mkdir(parents=True, exist_ok=True)
        gitdir = d / ".git"
        if os.path.lexists(gitdir) and not (gitdir.is_dir() and not gitdir.is_symlink()):
            raise SyncFailed(f"memory sync: {gitdir} is not a git folder; refusing to use it")
        if not gitdir.exists():
            self.repo.run("init", "-q", "-b", BRANCH)
        self.recover_interrupted_rebase()
        head = self.repo.run("symbolic-ref", "-q", "HEAD", check=False).out.strip()
        if head != f"refs/heads/{BRANCH}":
            raise SyncFailed(
                f"memory sync: the user store's repository {d} is on {one_line(head, 60) or 'no branch'}, "
                f"not {BRANCH}; switch it back with git"
            )
        url = self.repo.run("remote", "get-url", "origin", check=False)
        if not url.ok:
            self.repo.run("remote", "add", "origin", "--", self.remote)
        elif url.out.strip() != self.remote:
            self.repo.run("remote", "set-url", "origin", "--", self.remote)
        journal.recover_locked(self.stores.layout)
        self.rebuild_locked()

    def recover_interrupted_rebase(self) -> None:
        """A sync that died mid-rebase: abort it (its commits are all still on the branch)
        unless something was written into that half-done tree since, which only git can sort out."""
        if not self.repo.rebasing():
            return
        status = self.repo.run("status", "--porcelain", "-z", "--no-renames", "--untracked-files=all").out
        # Staged entries are that sync's own resolutions; a change in the work tree or a new
        # file was written since (the app), and an abort would throw it away.
        if any(
            e[:2] not in _UNMERGED and (e[1:2] != " " or e.startswith("??")) for e in status.split("\0") if e
        ):
            raise SyncFailed(
                f"memory sync: an earlier sync was interrupted while rebasing {self.repo.dir} and files "
                "changed since; finish or abort that rebase with git"
            )
        self.repo.run("rebase", "--abort")

    def rebuild_locked(self) -> None:
        """MEMORY.md (and the git files) from the cards, then everything committed."""
        rebuild_indexes_locked(self.stores.layout, None, [Level.USER])
        self.commit_locked()

    def commit_locked(self) -> None:
        self.repo.run("add", "-A")
        staged = self.repo.run("diff", "--cached", "--name-only", "-z", "--no-renames").out
        paths = [p for p in staged.split("\0") if p]
        marked = self.repo.with_markers([p for p in paths if is_card_path(p)], None)
        if marked:
            it = "it" if len(marked) == 1 else "each"
            raise SyncFailed(
                f"memory sync: refused to commit {_plural(len(marked), 'card')} with conflict-marker lines "
                f"(<<<<<<<, =======, >>>>>>>): {_names(marked)}; keep one version in {it} and delete "
                "the marker lines, the next sync commits and pushes"
            )
        if paths:
            message = commit_message(paths, self.host).encode()
            self.repo.run(
                "commit", "-q", "--no-verify", "-F", "-", env=self.repo.identity_env(), input=message
            )

    # -- the remote ------------------------------------------------------------------------------

    def fetch(self) -> str | None:
        """``origin/main`` as the remote has it now (None: the remote has no such branch yet)."""
        res = self.repo.run("fetch", "-q", "--no-tags", "--prune", "origin", check=False)
        if not res.ok:
            raise SyncFailed(f"memory sync: cannot reach {self.short}: {git_reason(res)}")
        return self.repo.rev(REMOTE_REF)

    def check_rewrite(self, remote_head: str | None) -> str | None:
        """Refuse a remote whose history no longer holds the commit this machine last synced
        with (before the work tree is touched), unless ``accept_rewrite``. The commit to replay
        local work from, or None for all of it."""
        synced = self.repo.rev(self.synced)
        if synced is None:
            return None
        if remote_head is not None and self.repo.is_ancestor(synced, remote_head):
            return None  # a normal descendant: deletions there are someone's edits, and sync
        if not self.accept_rewrite:
            raise SyncFailed(self.rewrite_line(synced, remote_head))
        # Taken as the person said: only this machine's commits since that sync are replayed.
        head = self.repo.rev("HEAD")
        return synced if head is not None and self.repo.is_ancestor(synced, head) else None

    def rewrite_line(self, synced: str, remote_head: str | None) -> str:
        """Why a rewritten remote is refused, the cards taking it would change here, and what to do."""
        remote_tree = self.repo.tree(remote_head) if remote_head else []
        local = set(self.stores.user.note_names())
        lost = lost_cards(self.repo.tree(synced), remote_tree, local)
        there = set(remote_tree)
        changed = [
            p
            for p in self.repo.changed(synced, remote_head)
            if is_card_path(p) and p not in lost and (p in local or p in there)
        ]
        what = []
        if changed:
            what.append(f"taking it would change {_plural(len(changed), 'card')} here ({_names(changed)})")
        if lost:
            what.append(f"it lost {_plural(len(lost), 'card')} this machine has ({_names(lost)})")
        store = shlex.quote(str(self.repo.dir))
        return (
            f"memory sync: refused: the remote's history was rewritten ({self.short} no longer holds "
            f"the commit this machine last synced with); {'; '.join(what) or 'no card differs'}. "
            "Nothing was changed here: `pseudoclaude memory sync --accept-rewrite` takes the remote's "
            "history (this machine's changes since are replayed on it), "
            f"`git -C {store} push --force origin {BRANCH}` puts this machine's back"
        )

    def push(self, remote_head: str | None) -> None:
        for attempt in (1, 2):
            head = self.repo.rev("HEAD")
            if head is None or head == remote_head:
                return
            head = self.without_markers(remote_head, head)
            ahead = self.repo.run(
                "rev-list", "--count", head if remote_head is None else f"{remote_head}..{head}"
            )
            res = self.repo.run(
                "push", "-q", "--no-verify", "origin", f"{head}:refs/heads/{BRANCH}", check=False
            )
            if res.ok:
                self.pushed += int(ahead.out.strip() or 0)
                self.repo.run("update-ref", REMOTE_REF, head)
                self.repo.run("update-ref", self.synced, head)
                return
            if attempt == 2:
                break
            # Someone pushed meanwhile: take their commits in once more, then try again.
            remote_head = self.fetch()
            base = self.check_rewrite(remote_head)
            with self.stores.locked(self.timeout):
                conflicted = self.integrate_locked(remote_head, base)
            if conflicted:
                raise SyncFailed(
                    f"memory sync: {_plural(len(conflicted), 'card')} changed on two machines now "
                    f"conflicted ({_names(conflicted)}); resolve them, the next sync pushes",
                    conflicted,
                )
        raise SyncFailed(f"memory sync: push to {self.short} refused: {git_reason(res)}")

    def without_markers(self, remote_head: str | None, head: str) -> str:
        """Refuse to push a card holding a conflict-marker line; the commits a conflict left
        its markers in (resolved since) go as one commit of where they led. The head to push."""
        cards = [p for p in self.repo.changed(remote_head, head) if is_card_path(p)]
        marked = self.repo.with_markers(cards, head)
        if marked:
            raise SyncFailed(
                f"memory sync: refused to push: {_plural(len(marked), 'card')} committed with "
                f"conflict-marker lines ({_names(marked)}); keep one version and delete the marker "
                "lines, the next sync pushes"
            )
        span = head if remote_head is None else f"{remote_head}..{head}"
        if not self.repo.run("log", "--format=%H", "-G", MARKER_REGEX, span, "--", *_CARD_SPECS).out.strip():
            return head
        parents = [] if remote_head is None else ["-p", remote_head]
        message = commit_message(cards, self.host).encode()
        one = self.repo.run(
            "commit-tree",
            f"{head}^{{tree}}",
            *parents,
            "-F",
            "-",
            env=self.repo.identity_env(),
            input=message,
        ).out.strip()
        self.repo.run(
            "update-ref",
            "-m",
            "memory sync: a resolved conflict's commits in one",
            f"refs/heads/{BRANCH}",
            one,
            head,
        )
        return one

    # -- integration -----------------------------------------------------------------------------

    def integrate_locked(self, remote_head: str | None, base: str | None) -> tuple[str, ...]:
        """The remote's commits under this machine's (rebase); the cards left conflicted."""
        self.commit_locked()  # anything written while we were fetching
        old = self.repo.rev("HEAD")
        if remote_head is not None:
            if old is None:
                self.repo.run("checkout", "-q", "-B", BRANCH, remote_head)
            elif not self.repo.is_ancestor(remote_head, old):
                ConflictRebase(self.repo, self.short, self.host).run(remote_head, base)
            self.rebuild_locked()
            self.repo.run("update-ref", self.synced, remote_head)
        self.pulled |= {p for p in self.repo.changed(old, self.repo.rev("HEAD")) if is_card_path(p)}
        return tuple(n.filename for n in self.stores.user.notes() if n.conflict is not None)


@contextmanager
def _sync_lock(stores: MemoryStores, timeout: float) -> Iterator[None]:
    """One sync of a home at a time (the app at start or quit, and `memory sync`)."""
    stores.fs.makedirs(stores.paths.locks_dir, 0o700)
    lock = file_lock(stores.paths.locks_dir / "user-sync.lock", timeout)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise SyncFailed(
            f"memory sync: another sync of this user store is running ({lock.lock_file})"
        ) from None
    try:
        yield
    finally:
        lock.release()


def sync_user_store(
    stores: MemoryStores,
    remote: str,
    *,
    timeout: float = 60.0,
    accept_rewrite: bool = False,
    cancel: GitCancel | None = None,
) -> SyncResult:
    """Keep the user store in step with ``remote`` (see the module's docstring). Never raises
    for a git, lock or I/O failure: ``ok`` False and one line. ``accept_rewrite``: take a remote
    whose history was rewritten (this machine's commits since the last sync replayed on it).
    ``cancel``: stops the sync from another thread (each git's process group killed)."""
    remote = remote.strip()
    problem = remote_problem(remote)
    if problem is not None:
        return SyncResult(ok=False, line=f"memory sync: refused {short_remote(remote)!r}: {problem}")
    if not git_available():
        return SyncResult(ok=False, line="memory sync: git is not installed (or not on PATH)")
    try:
        with _sync_lock(stores, timeout):
            return _Sync(stores, remote, timeout, accept_rewrite=accept_rewrite, cancel=cancel).run()
    except SyncFailed as e:
        return SyncResult(ok=False, line=e.line, pulled=e.pulled, conflicted=e.conflicted)
    except (GitError, TransactionError, StoreError) as e:
        return SyncResult(ok=False, line=f"memory sync: {one_line(redact_url_credentials(str(e)), 300)}")
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        return SyncResult(ok=False, line=f"memory sync: {one_line(where + (e.strerror or str(e)), 300)}")

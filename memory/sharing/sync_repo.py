"""The user store's git repository as ``memory sync`` drives it (memory/sharing/sync.py).

Every git it runs gets the same config overrides, so a user's or the repository's config cannot
change what a sync does; a failed git raises ``GitError`` named by its subcommand, with git's own
reason in one short line. ``SyncFailed`` is how any step of a sync ends it with one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memory.sharing.git import GitCancel, GitError, GitResult, git
from memory.text.lines import one_line
from memory.text.redact import redact_url_credentials

__all__ = ["BRANCH", "MARKER_REGEX", "REMOTE_REF", "SyncFailed", "SyncRepo", "git_reason"]

BRANCH = "main"
REMOTE_REF = "refs/remotes/origin/main"
FALLBACK_NAME, FALLBACK_EMAIL = "PseudoClaude", "pseudoclaude@localhost"
# git's conflict markers at their default size, one line each, as git grep and git log -G read
# them (ERE). ``=======`` exactly: a longer run of "=" underlines a Markdown heading.
MARKER_REGEX = r"^((<{7}|>{7}|\|{7})([[:space:]].*)?|={7}[[:space:]]*)$"
# What a user's or the repository's config may not change about a sync: where conflict
# markers look the way conflict.py reads them, no recorded resolutions replayed, no stash
# taken behind our back, symlinks from a remote checked out as plain files.
_CFG = (
    "-c",
    "core.symlinks=false",
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "merge.conflictStyle=merge",
    "-c",
    "rerere.enabled=false",
    "-c",
    "rebase.autoStash=false",
    "-c",
    "rebase.autoSquash=false",
    "-c",
    "rebase.updateRefs=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "core.editor=true",
)


class SyncFailed(Exception):
    """Ends a sync with ``SyncResult(ok=False, line=...)`` (and what it did know)."""

    def __init__(self, line: str, conflicted: tuple[str, ...] = (), pulled: tuple[str, ...] = ()) -> None:
        super().__init__(line)
        self.line = line
        self.conflicted = conflicted
        self.pulled = pulled


def git_reason(res: GitResult) -> str:
    """git's first ``fatal:``/``error:`` line (its last line is often advice), one short line."""
    for line in (res.err + "\n" + res.out).splitlines():
        if line.startswith(("fatal: ", "error: ")):
            text = line.removeprefix("fatal: ").removeprefix("error: ")
            break
    else:
        text = res.reason()
    return one_line(redact_url_credentials(text), 200)


@dataclass
class SyncRepo:
    """The store folder's repository: each git run in it with the sync's config."""

    dir: Path
    timeout: float
    cancel: GitCancel | None = None

    def run(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None, input: bytes | None = None
    ) -> GitResult:
        res = git(
            self.dir,
            *_CFG,
            *args,
            check=False,
            timeout=self.timeout,
            env=env,
            input=input,
            cancel=self.cancel,
        )
        if check and not res.ok:
            # Named by its subcommand (git.py would name the first ``-c``).
            raise GitError(f"git {args[0] if args else ''}: {git_reason(res)}")
        return res

    def rev(self, ref: str) -> str | None:
        res = self.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
        return res.out.strip() if res.ok and res.out.strip() else None

    def tree(self, commit: str) -> list[str]:
        out = self.run("ls-tree", "-z", "--name-only", commit).out
        return [p for p in out.split("\0") if p]

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.run("merge-base", "--is-ancestor", older, newer, check=False).code == 0

    def rebasing(self) -> bool:
        gitdir = self.dir / ".git"
        return (gitdir / "rebase-merge").is_dir() or (gitdir / "rebase-apply").is_dir()

    def identity_env(self) -> dict[str, str]:
        """The person's git identity when set; otherwise fallbacks, so a machine without one still syncs."""
        env: dict[str, str] = {}
        if not self.run("config", "--get", "user.name", check=False).out.strip():
            env |= {"GIT_AUTHOR_NAME": FALLBACK_NAME, "GIT_COMMITTER_NAME": FALLBACK_NAME}
        if not self.run("config", "--get", "user.email", check=False).out.strip():
            env |= {"GIT_AUTHOR_EMAIL": FALLBACK_EMAIL, "GIT_COMMITTER_EMAIL": FALLBACK_EMAIL}
        return env

    def changed(self, old: str | None, new: str | None) -> list[str]:
        if new is None or old == new:
            return []
        if old is None:
            return self.tree(new)
        out = self.run("diff", "--name-only", "-z", "--no-renames", old, new).out
        return [p for p in out.split("\0") if p]

    def with_markers(self, paths: list[str], rev: str | None) -> list[str]:
        """The files among ``paths`` holding a conflict-marker line: as staged (``rev`` None) or
        at ``rev``."""
        found: list[str] = []
        for i in range(0, len(paths), 500):  # a command line of bounded length
            res = self.run(
                "grep",
                "-l",
                "-z",
                "-a",
                "-E",
                "-e",
                MARKER_REGEX,
                "--cached" if rev is None else rev,
                "--",
                *paths[i : i + 500],
                check=False,
                env={"GIT_LITERAL_PATHSPECS": "1"},
            )
            if res.code not in (0, 1):
                raise GitError(f"git grep: {git_reason(res)}")
            found += [p.removeprefix(f"{rev}:") if rev else p for p in res.out.split("\0") if p]
        return sorted(found)

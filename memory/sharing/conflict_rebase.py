"""The rebase of ``memory sync``: this machine's commits replayed onto the remote's, and every
conflict left in the card with both versions, labelled by machine (never a side dropped).

Any other failure aborts the rebase: the branch is as it was before.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from memory.constants import INDEX_FILE
from memory.sharing.git import GitError
from memory.sharing.sync_repo import SyncFailed, SyncRepo, git_reason
from memory.store.conflict import has_conflict
from memory.store.store import GIT_FILES
from memory.text.conflict_sides import local_label, remote_label
from memory.text.lines import one_line

__all__ = ["ConflictRebase"]

MAX_REBASE_STEPS = 10_000  # one per replayed commit; a bound, not a limit anyone reaches


@dataclass
class ConflictRebase:
    """One rebase of the local commits in ``repo``; ``short`` names the remote and ``host`` this
    machine in the conflict markers and the failure lines."""

    repo: SyncRepo
    short: str
    host: str

    def run(self, onto: str, base: str | None) -> None:
        """``git rebase`` of the local commits onto ``onto``; every conflict left in the card
        with both versions (never a side dropped). Any other failure aborts: the branch is as before."""
        args = ["rebase", "-q", "--onto", onto, base] if base is not None else ["rebase", "-q", onto]
        env = self.repo.identity_env()
        res = self.repo.run(*args, check=False, env=env)
        stuck = False
        try:
            for _ in range(MAX_REBASE_STEPS):
                if not self.repo.rebasing():
                    if res.ok:
                        return
                    raise SyncFailed(f"memory sync: cannot rebase onto {self.short}: {git_reason(res)}")
                unmerged = self.unmerged()
                if not unmerged and not res.ok:
                    # Stopped for something else than a conflict: one more try, then give up.
                    if stuck:
                        raise SyncFailed(f"memory sync: rebase onto {self.short} stopped: {git_reason(res)}")
                    stuck = True
                for path, stages in unmerged.items():
                    self.resolve(path, stages)
                # A step whose resolution equals what is already there (a change kept on one
                # machine, deleted on the other): nothing to commit, so skipped.
                empty = self.repo.run("diff", "--cached", "--quiet", "HEAD", check=False).ok
                res = self.repo.run("rebase", "--skip" if empty else "--continue", check=False, env=env)
            raise SyncFailed(f"memory sync: rebase onto {self.short} did not finish")
        except (SyncFailed, GitError, OSError):
            if self.repo.rebasing():
                self.repo.run("rebase", "--abort", check=False)
            raise

    def unmerged(self) -> dict[str, dict[int, str]]:
        """path -> {stage: blob} of the paths a rebase step left unmerged (1 base, 2 remote, 3 local)."""
        out: dict[str, dict[int, str]] = {}
        for entry in self.repo.run("ls-files", "-u", "-z").out.split("\0"):
            if not entry:
                continue
            meta, _, path = entry.partition("\t")
            _mode, blob, stage = meta.split()
            out.setdefault(path, {})[int(stage)] = blob
        return out

    def resolve(self, path: str, stages: dict[int, str]) -> None:
        """Settle one unmerged path without losing a side: a card changed on both gets both
        versions with conflict markers (a conflicted card, for a person); a card changed on one
        and deleted on the other keeps the changed one; ``MEMORY.md`` and the git files are
        derived, so either side does (rebuilt after the rebase)."""
        derived = path == INDEX_FILE or path in GIT_FILES
        if 2 in stages and 3 in stages and not derived:
            self.write(path, self.merged(path))
        elif 2 in stages or 3 in stages:
            self.repo.run("checkout", "--ours" if 2 in stages else "--theirs", "--", path)
        else:
            self.repo.run("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
            return
        self.repo.run("add", "--", path)

    def merged(self, path: str) -> bytes:
        """Both versions of a card in one file, in the hunks git's ``merge-file`` draws, labelled
        by machine; one whole-file hunk when it cannot (binary content). Bytes as they are."""
        out = self.repo.run("checkout-index", "--temp", "--stage=all", "-z", "--", path).out
        names = out.split("\0")[0].partition("\t")[0].split(" ")
        temps = {
            stage: self.repo.dir / name for stage, name in zip((1, 2, 3), names, strict=False) if name != "."
        }
        try:
            if 1 not in temps:  # added on both machines: no common version
                temps[1] = self.repo.dir / f"{temps[2].name}.base"
                temps[1].write_bytes(b"")
            # This machine's version above the markers' ``=======`` (git's "ours" in a merge),
            # the remote's below; each labelled by machine, which is how the app names them.
            mine_label, remote = local_label(one_line(self.host, 40)), remote_label(self.short)
            mine, theirs = temps[3].read_bytes(), temps[2].read_bytes()
            # In place: the result replaces the first file.
            res = self.repo.run(
                "merge-file",
                "-L",
                mine_label,
                "-L",
                "base",
                "-L",
                remote,
                str(temps[3]),
                str(temps[1]),
                str(temps[2]),
                check=False,
            )
            result = temps[3].read_bytes()
            if res.code == 0 or (0 < res.code < 128 and has_conflict(result.decode("utf-8", "replace"))):
                return result
            # merge-file could not (binary content): both versions whole.
            return (
                f"<<<<<<< {mine_label}\n".encode()
                + _with_newline(mine)
                + b"=======\n"
                + _with_newline(theirs)
                + f">>>>>>> {remote}\n".encode()
            )
        finally:
            for f in temps.values():
                f.unlink(missing_ok=True)

    def write(self, path: str, data: bytes) -> None:
        target = self.repo.dir / path
        real_dir = os.path.realpath(self.repo.dir)
        if os.path.commonpath([real_dir, os.path.realpath(target.parent)]) != real_dir or target.is_symlink():
            raise SyncFailed(f"memory sync: refusing to write {one_line(path, 60)} outside the store")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _with_newline(data: bytes) -> bytes:
    return data if not data or data.endswith(b"\n") else data + b"\n"

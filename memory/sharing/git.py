"""Running git on a store, safely: no hooks, no prompts, no pager, bounded in time.

A project store sits in a repository someone else may have written (a clone): its config can
name hooks, an fsmonitor, a pager or an ssh command. Every call here turns those off on the
command line, never asks on the terminal (a sync must fail with one line, not hang on a
password prompt), and reads output as bytes decoded leniently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GitError", "GitResult", "git", "git_available", "repo_root"]

# What a repository's own config may not do to us.
_SAFE = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.pager=cat",
    "-c", "commit.gpgsign=false",
    "-c", "tag.gpgsign=false",
    "-c", "protocol.ext.allow=never",
    "-c", "protocol.fd.allow=never",
    "-c", "advice.detachedHead=false",
    "-c", "color.ui=false",
)
DEFAULT_TIMEOUT = 60.0


class GitError(Exception):
    """A git command that failed or could not run, in one line."""


@dataclass(frozen=True)
class GitResult:
    code: int
    out: str
    err: str

    @property
    def ok(self) -> bool:
        return self.code == 0

    def reason(self) -> str:
        """git's own last meaningful line of stderr (or stdout), for a one-line message."""
        for text in (self.err, self.out):
            lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("hint:")]
            if lines:
                return lines[-1].removeprefix("fatal: ").removeprefix("error: ")[:300]
        return f"git exited with {self.code}"


def git_available() -> bool:
    return shutil.which("git") is not None


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_EDITOR": "true",
            "GIT_SEQUENCE_EDITOR": "true",
            "GIT_MERGE_AUTOEDIT": "no",
            "GIT_PAGER": "cat",
            "LC_ALL": "C",
            "LANG": "C",
        }
    )
    # ssh may ask for a passphrase or a host key: never on our terminal.
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o ConnectTimeout=15")
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    env.pop("GIT_INDEX_FILE", None)
    if extra:
        env.update(extra)
    return env


def git(
    cwd: Path,
    *args: str,
    check: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    env: dict[str, str] | None = None,
    input: bytes | None = None,
) -> GitResult:
    """``git <args>`` in ``cwd``. ``check``: a non-zero exit raises GitError with git's reason.
    Raises GitError when git is missing or the command outlives ``timeout``."""
    try:
        done = subprocess.run(
            ["git", *_SAFE, *args],
            cwd=cwd,
            env=_env(env),
            capture_output=True,
            timeout=timeout,
            check=False,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0] if args else ''} did not finish within {timeout:g} s") from None
    except OSError as e:
        raise GitError(f"cannot run git: {e.strerror or e}") from None
    result = GitResult(done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace"))
    if check and not result.ok:
        raise GitError(f"git {args[0] if args else ''}: {result.reason()}")
    return result


def repo_root(path: Path) -> Path | None:
    """The work tree top level ``path`` is in, or None (not in git, git missing, unsafe)."""
    if not path.is_dir():
        return None
    try:
        res = git(path, "rev-parse", "--show-toplevel", check=False, timeout=10)
    except GitError:
        return None
    if not res.ok or not res.out.strip():
        return None
    return Path(res.out.strip())

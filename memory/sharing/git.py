"""Running git on a store, safely: no hooks, no prompts, no pager, bounded in time.

A project store sits in a repository someone else may have written (a clone): its config can
name hooks, an fsmonitor, a pager or an ssh command. Every call here turns those off on the
command line, never asks on the terminal (a sync must fail with one line, not hang on a
password prompt), and reads output as bytes decoded leniently.

Each git runs in a process group of its own: a call that outlives its bound, is cancelled
(``GitCancel``) or is interrupted kills that whole group, so no ssh or helper git started is left
behind it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GitCancel", "GitError", "GitResult", "git", "git_available", "repo_root"]

# What a repository's own config may not do to us.
_SAFE = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "tag.gpgsign=false",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "protocol.fd.allow=never",
    "-c",
    "advice.detachedHead=false",
    "-c",
    "color.ui=false",
)
DEFAULT_TIMEOUT = 60.0
REAP_S = 2.0  # after its group was killed, reading what git wrote gets this long


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


class GitCancel:
    """Stops the git calls of one job from another thread: ``cancel()`` kills the process group
    of each call running (git and what it started: ssh, a credential helper), and every later
    call fails at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._running: set[subprocess.Popen[bytes]] = set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            running = list(self._running)
        for proc in running:
            _kill_group(proc)

    def _enter(self, proc: subprocess.Popen[bytes]) -> bool:
        with self._lock:
            if self._cancelled:
                return False
            self._running.add(proc)
            return True

    def _leave(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._running.discard(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to git's process group (git leads it): whatever git started dies with it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Wait for a killed git, bounded: a child that left the group may hold its pipes open."""
    try:
        proc.communicate(timeout=REAP_S)
    except subprocess.TimeoutExpired:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()


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
    cancel: GitCancel | None = None,
) -> GitResult:
    """``git <args>`` in ``cwd``. ``check``: a non-zero exit raises GitError with git's reason.
    Raises GitError when git is missing, the command outlives ``timeout`` or ``cancel`` stops it
    (its whole process group killed)."""
    name = args[0] if args else ""
    try:
        proc = subprocess.Popen(
            ["git", *_SAFE, *args],
            cwd=cwd,
            env=_env(env),
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, killed whole (and no terminal to ask on)
        )
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH)") from None
    except OSError as e:
        raise GitError(f"cannot run git: {e.strerror or e}") from None
    if cancel is not None and not cancel._enter(proc):
        _kill_group(proc)
        _reap(proc)
        raise GitError(f"git {name} was cancelled")
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        _reap(proc)
        raise GitError(f"git {name} did not finish within {timeout:g} s") from None
    except BaseException:  # interrupted (Ctrl+C does not reach git's own group): no git left running
        _kill_group(proc)
        _reap(proc)
        raise
    finally:
        if cancel is not None:
            cancel._leave(proc)
    if cancel is not None and cancel.cancelled and proc.returncode < 0:
        raise GitError(f"git {name} was cancelled")
    result = GitResult(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
    if check and not result.ok:
        raise GitError(f"git {name}: {result.reason()}")
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

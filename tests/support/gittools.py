"""Real git in tests: a fixed identity, no user or system config, one line of stderr on failure."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


def git(cwd: Path, *args: str) -> str:
    """Run ``git *args`` in ``cwd``; its stdout (asserts it succeeded)."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def git_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``git *args`` in ``cwd`` like ``git``, but its result whatever the exit code (a merge
    that conflicts, a push that is refused)."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_EDITOR": "true",
        "GIT_MERGE_AUTOEDIT": "no",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def set_user(repo: Path, name: str) -> None:
    """The repository's own ``user.name`` (what a card's ``author`` is read from): the env
    identity of ``git`` above is for the commits only, not seen by ``git config``."""
    git(repo, "config", "user.name", name)
    git(repo, "config", "user.email", f"{name.lower().replace(' ', '.')}@example.invalid")


def new_repo(path: Path, user: str = "Ann") -> Path:
    """A real repository on branch ``main`` with one commit (a README), ``user.name`` set."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    set_user(path, user)
    (path / "README.md").write_text("# demo\nThe build command is `make build`.\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial")
    return path


def clone(src: Path, dst: Path, user: str) -> Path:
    """A clone of ``src`` at ``dst`` with its own ``user.name``."""
    git(src.parent, "clone", "-q", str(src), str(dst))
    set_user(dst, user)
    return dst


def commit_all(repo: Path, message: str) -> str:
    """Stage everything and commit; the new commit's id."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def hanging_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``GIT_SSH_COMMAND`` as a transport that never answers: a script that starts a child and
    waits, both PIDs appended to the returned file. No network: the host is never looked up."""
    pids = tmp_path / "ssh-pids"
    script = tmp_path / "hanging-ssh"
    script.write_text(f"#!/bin/sh\nsleep 120 &\necho $! >> '{pids}'\necho $$ >> '{pids}'\nwait\n")
    script.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(script))
    return pids


def started(pids: Path) -> list[int]:
    """The PIDs ``hanging_ssh``'s script wrote so far."""
    return [int(n) for n in pids.read_text().split()] if pids.exists() else []


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"

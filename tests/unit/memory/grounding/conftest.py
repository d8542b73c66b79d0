"""A real git workspace for the grounding tests (no network), and stores over it."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path

import pytest

from memory.store.stores import MemoryStores
from tests.support.memtools import create, trust_workspace

# Cards are written at this time; commits are dated after it, so `git log --since=<card's
# time>` sees them whatever the machine's clock says.
CARD_TIME = dt.datetime(2026, 11, 30, 4, 32, 46, tzinfo=dt.UTC)
COMMIT_DATE = "2026-11-30T12:00:00+0000"


def card_clock() -> dt.datetime:
    return CARD_TIME


def git(ws: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": COMMIT_DATE, "GIT_COMMITTER_DATE": COMMIT_DATE}
    done = subprocess.run(
        [
            "git",
            "-C",
            str(ws),
            "-c",
            "user.name=Test",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree with a committed Makefile and src/app.py, by its real path."""
    ws = Path(os.path.realpath(tmp_path)) / "repo"
    (ws / "src").mkdir(parents=True)
    git(ws, "init", "-q")
    (ws / "Makefile").write_text("all:\n\techo hi\n")
    (ws / "src" / "app.py").write_text("".join(f"line_{i} = {i}\n" for i in range(1, 60)))
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "start")
    return ws


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the workspace holding a secret file."""
    d = Path(os.path.realpath(tmp_path)) / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("top secret\n")
    return d


def stores_for(ws: Path, home: Path | None = None) -> MemoryStores:
    stores = MemoryStores(ws, home, clock=card_clock)
    trust_workspace(ws, home)
    return stores


@pytest.fixture
def stores(repo: Path) -> MemoryStores:
    return stores_for(repo)


def cited_card(stores: MemoryStores, *cites: object, title: str = "Build") -> str:
    """A project card citing ``cites`` (applied as a person's op); its filename."""
    result = stores.apply([(0, create("project", title, "Run make all.", cites=cites))], source="manual")
    assert result.applied, result
    return result.applied[0].filename

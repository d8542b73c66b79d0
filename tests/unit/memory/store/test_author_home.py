"""Who wrote a card, and what a shared card must not say about them (memory/store/transaction.py,
memory/store/author.py): ``author`` is the git ``user.name`` where the card is
written (the repository for a project card, the user store's home for a user card), on create and
on update; a project card has the person's home path written ``~``, a user card keeps it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.constants import Level
from memory.store.stores import MemoryStores
from tests.support.gittools import git, set_user
from tests.support.memtools import create, op, write_note


def stores_in(tmp_path: Path, project_user: str = "", home_user: str = "") -> MemoryStores:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    if project_user:
        set_user(ws, project_user)
    home = tmp_path / "pchome"
    home.mkdir()
    if home_user:
        git(home, "init", "-q", "-b", "main")
        set_user(home, home_user)
    stores = MemoryStores(os.path.realpath(ws), home)
    stores.trust_project()
    return stores


def test_author_is_the_repository_user_name_on_create_and_update(tmp_path: Path) -> None:
    stores = stores_in(tmp_path, project_user="Ann Example", home_user="Uma")
    res = stores.apply(
        [(0, create("project", "Build", "Run make.")), (1, create("user", "Tabs", "Use tabs."))],
        source="manual",
    )
    project, user = (stores.read_note(a.level, a.filename) for a in res.applied)
    assert project.meta.author == "Ann Example" and user.meta.author == "Uma"
    assert "\nauthor: Ann Example\n" in (stores.project.dir / project.filename).read_text()
    write_note(stores, Level.PROJECT, "project_knowledge_seed.md", "Seed", "by nobody")
    assert stores.read_note("project", "project_knowledge_seed.md").meta.author == ""
    assert stores.apply(
        [(0, op("update", "project", filename="project_knowledge_seed.md", content="changed"))], source="s-1"
    ).applied
    assert stores.read_note("project", "project_knowledge_seed.md").meta.author == "Ann Example"


def test_no_user_name_writes_no_author_line(tmp_path: Path) -> None:
    stores = stores_in(tmp_path)
    res = stores.apply([(0, create("project", "Build", "Run make."))], source="manual")
    text = (stores.project.dir / res.applied[0].filename).read_text()
    assert "author:" not in text


@pytest.fixture
def short_home() -> Iterator[Path]:
    """A home with a short path: a title is cut to its limit before ``~`` replaces the home."""
    top = Path(tempfile.mkdtemp(prefix="h", dir="/tmp"))
    (top / "ann").mkdir()
    yield top / "ann"
    shutil.rmtree(top)


def test_the_home_path_is_written_tilde_in_a_project_card_only(
    tmp_path: Path, short_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    person = short_home
    monkeypatch.setenv("HOME", str(person))
    stores = stores_in(tmp_path)
    where = f"{person}/src/app"
    res = stores.apply(
        [
            (
                0,
                create(
                    "project",
                    f"Sources in {where}",
                    f"The code is in {where}; not {person}x/other.",
                    summary=f"Under {where}",
                ),
            ),
            (1, create("user", f"Sources in {where}", f"The code is in {where}.", summary=f"Under {where}")),
        ],
        source="manual",
    )
    project, user = (stores.read_note(a.level, a.filename) for a in res.applied)
    assert project.meta.title == "Sources in ~/src/app" and project.meta.summary == "Under ~/src/app"
    assert project.body == f"The code is in ~/src/app; not {person}x/other.\n"
    assert str(person) + "/" not in (stores.project.dir / project.filename).read_text()
    assert user.meta.title == f"Sources in {where}" and user.body == f"The code is in {where}.\n"
    upd = stores.apply(
        [(0, op("update", "project", filename=project.filename, content=f"Moved to {person}/lib."))],
        source="manual",
    )
    assert upd.applied and stores.read_note("project", project.filename).body == "Moved to ~/lib.\n"


def test_an_update_by_someone_git_does_not_know_keeps_the_author(tmp_path: Path) -> None:
    stores = stores_in(tmp_path, project_user="Ann Example")
    name = stores.apply([(0, create("project", "Build", "Run make."))], source="manual").applied[0].filename
    git(stores.paths.workspace, "config", "--unset", "user.name")
    from memory.store import author

    author._NAMES.clear()  # the 30 s cache of git's answer
    assert stores.apply(
        [(0, op("update", "project", filename=name, content="Run make all."))], source="s-2"
    ).applied
    assert stores.read_note("project", name).meta.author == "Ann Example"


def test_a_long_home_never_leaves_part_of_itself_in_a_cut_title(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    person = tmp_path / ("h" * 120)
    person.mkdir()
    monkeypatch.setenv("HOME", str(person))
    stores = stores_in(tmp_path)
    res = stores.apply([(0, create("project", f"Notes kept in {person}/notes/today", "x"))], source="manual")
    assert stores.read_note("project", res.applied[0].filename).meta.title == "Notes kept in ~/notes/today"

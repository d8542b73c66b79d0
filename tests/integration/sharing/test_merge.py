"""The project store through git, with real git: two clones that add cards merge
without a conflict (MEMORY.md is union-merged, then rebuilt from the cards), a card both branches
changed is conflicted until a person resolves it, and a card deleted here but changed on another
branch is reported by ``memory doctor``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory.store.store import render_index
from memory.store.stores import MemoryStores
from tests.support.clitools import Result, create_op, run_cli
from tests.support.gittools import clone, commit_all, git, git_run, new_repo

pytestmark = pytest.mark.timeout(180)

SHARED = "project_knowledge_shared-card.md"
STORE = Path(".PseudoClaude/memory")


class Person:
    """One person's clone and PseudoClaude home."""

    def __init__(self, repo: Path, home: Path) -> None:
        self.repo, self.home = repo, home

    def cli(self, *args: str, stdin: str | None = None) -> Result:
        return run_cli(None, self.repo, "memory", *args, stdin=stdin, PSEUDOCLAUDE_HOME=str(self.home))

    def apply(self, *ops: dict[str, Any]) -> Result:
        res = self.cli("apply", "-", stdin=json.dumps(list(ops)))
        assert res.code == 0, res.err
        return res

    @property
    def store(self) -> Path:
        return self.repo / STORE


def update_op(filename: str, content: str, title: str = "", summary: str = "") -> dict[str, Any]:
    op: dict[str, Any] = {"action": "update", "level": "project", "filename": filename, "content": content}
    if title:
        op["title"] = title
    if summary:
        op["summary"] = summary
    return op


def two_clones(tmp_path: Path) -> tuple[Person, Person]:
    """An origin whose store holds one card (written by Ann's PseudoClaude), cloned by Ann and Bob,
    each trusting the store (the person's "y" the first time)."""
    origin = Person(new_repo(tmp_path / "origin", "Ann"), tmp_path / "origin-home")
    origin.apply(create_op("Shared card", "Both clones have this card.", summary="The shared one."))
    commit_all(origin.repo, "memory: the shared card")
    people = []
    for name in ("Ann", "Bob"):
        p = Person(clone(origin.repo, tmp_path / name.lower(), name), tmp_path / f"{name.lower()}-home")
        MemoryStores(p.repo, p.home).trust_project()
        people.append(p)
    return people[0], people[1]


def merge(into: Person, other: Person) -> Any:
    return git_run(into.repo, "pull", "--no-rebase", "--no-edit", str(other.repo), "main")


def index_cards(person: Person) -> list[str]:
    res = person.cli("index")
    assert res.code == 0, res.err
    return [line.rsplit("(", 1)[1].rstrip(")") for line in res.out.splitlines() if line.startswith("- [")]


def cards_add_on_both_branches(ann: Person, bob: Person, *, keep_gitattributes: bool = True) -> None:
    ann.apply(
        create_op("Alpha deploy", "Deploy with make deploy.", summary="How to deploy."),
        create_op("Alpha tests", "Run make test.", summary="How to test."),
    )
    ann.apply(
        update_op(SHARED, "Both clones have this card; Ann added a line.", summary="The shared one, edited."),
        create_op("Zebra", "The zebra crossing module.", summary="Zebra."),
    )
    # Names that sort between the other side's: a union merge keeps ours then theirs, unsorted.
    bob.apply(
        create_op("Able lint", "Run make lint.", summary="How to lint."),
        create_op("Zeta docs", "Docs live in docs/.", summary="Where the docs are."),
    )
    for p in (ann, bob):
        if not keep_gitattributes:
            (p.store / ".gitattributes").unlink()
        commit_all(p.repo, f"memory: cards of {p.repo.name}")


@pytest.mark.parametrize("direction", ["ann_merges_bob", "bob_merges_ann"])
def test_cards_added_on_two_branches_merge_without_a_conflict_and_the_index_is_rebuilt(
    tmp_path: Path, direction: str
) -> None:
    ann, bob = two_clones(tmp_path)
    cards_add_on_both_branches(ann, bob)
    into, other = (ann, bob) if direction == "ann_merges_bob" else (bob, ann)
    done = merge(into, other)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CONFLICT" not in done.stdout + done.stderr
    on_disk = (into.store / "MEMORY.md").read_text()
    assert "<<<<<<<" not in on_disk
    expected = sorted(
        [
            "project_knowledge_alpha-deploy.md",
            "project_knowledge_alpha-tests.md",
            SHARED,
            "project_knowledge_able-lint.md",
            "project_knowledge_zebra.md",
            "project_knowledge_zeta-docs.md",
        ]
    )
    assert index_cards(into) == expected
    # The command rebuilt the union-merged file from the cards: sorted, each card once.
    rebuilt = (into.store / "MEMORY.md").read_text()
    assert on_disk != rebuilt  # the union's order (and the shared card's old line next to its new one)
    assert rebuilt == render_index(MemoryStores(into.repo, into.home).notes("project"))
    assert [line.rsplit("(", 1)[1].rstrip(")") for line in rebuilt.splitlines()] == expected
    assert "The shared one, edited." in rebuilt
    doctor = into.cli("doctor")
    assert doctor.code == 0, doctor.out + doctor.err
    assert "memory stores are healthy" in doctor.out


def test_without_the_gitattributes_the_same_merge_conflicts_on_memory_md(tmp_path: Path) -> None:
    ann, bob = two_clones(tmp_path)
    cards_add_on_both_branches(ann, bob, keep_gitattributes=False)
    done = merge(ann, bob)
    assert done.returncode != 0
    assert "CONFLICT" in done.stdout and "MEMORY.md" in done.stdout


def conflicted_card(tmp_path: Path) -> tuple[Person, Person]:
    ann, bob = two_clones(tmp_path)
    ann.apply(
        update_op(SHARED, "Ann's version of the card.", title="Shared card by Ann", summary="Ann's summary.")
    )
    bob.apply(
        update_op(SHARED, "Bob's version of the card.", title="Shared card by Bob", summary="Bob's summary.")
    )
    commit_all(ann.repo, "memory: Ann's edit")
    commit_all(bob.repo, "memory: Bob's edit")
    done = merge(ann, bob)
    assert done.returncode != 0 and f"CONFLICT (content): Merge conflict in {STORE / SHARED}" in done.stdout
    return ann, bob


def test_a_card_both_branches_edited_is_conflicted_until_memory_apply_of_an_update_resolves_it(
    tmp_path: Path,
) -> None:
    ann, _ = conflicted_card(tmp_path)
    assert "<<<<<<<" in (ann.store / SHARED).read_text()
    res = ann.cli("index")
    assert res.code == 0 and SHARED not in res.out and "Ann's version" not in res.out
    assert f"left out project card {SHARED}: conflicted: changed on two branches" in res.err
    shown = ann.cli("show", "project", SHARED)
    assert shown.code == 1 and "conflicted" in shown.err and "Bob's version" not in shown.out
    doctor = ann.cli("doctor")
    assert doctor.code == 1
    assert (
        f"problem: project store: {SHARED} is conflicted (changed on two branches): "
        "ours: Shared card by Ann — Ann's summary., theirs: Shared card by Bob — Bob's summary.; "
        "resolve it in the card editor or with `memory apply` of an update"
    ) in doctor.out
    # A person resolves it: an update op with the whole merged content replaces the file.
    ann.apply(update_op(SHARED, "Ann's and Bob's lines, merged.", title="Shared card", summary="Merged."))
    assert "<<<<<<<" not in (ann.store / SHARED).read_text()
    assert SHARED in index_cards(ann)
    doctor = ann.cli("doctor")
    assert doctor.code == 0, doctor.out
    shown = ann.cli("show", "project", SHARED)
    assert shown.code == 0 and "Ann's and Bob's lines, merged." in shown.out


@pytest.mark.parametrize("settle", ["confirm", "edit", "delete"])
def test_a_card_deleted_here_and_changed_on_another_branch_is_reported_until_a_person_decides(
    tmp_path: Path, settle: str
) -> None:
    ann, bob = two_clones(tmp_path)
    ann.apply({"action": "delete", "level": "project", "filename": SHARED})
    commit_all(ann.repo, "memory: Ann deletes the shared card")
    bob.apply(update_op(SHARED, "Bob still needs this card.", summary="Bob's change."))
    commit_all(bob.repo, "memory: Bob edits the shared card")
    done = merge(ann, bob)
    assert done.returncode != 0 and "CONFLICT (modify/delete)" in done.stdout
    git(ann.repo, "add", str(STORE / SHARED))  # keep the modified side, as git suggests
    git(ann.repo, "commit", "-q", "--no-edit")
    doctor = ann.cli("doctor")
    assert doctor.code == 1
    line = next(x for x in doctor.out.splitlines() if SHARED in x)
    assert f"project store: {SHARED} was deleted here (" in line
    assert (
        "changed by Bob on another branch; keep it (edit or `memory confirm` it) or delete it again" in line
    )
    if settle == "confirm":
        res = ann.cli("confirm", "project", SHARED)
    elif settle == "edit":
        res = ann.cli("apply", "-", stdin=json.dumps([update_op(SHARED, "Kept, with Ann's note.")]))
    else:
        res = ann.cli(
            "apply", "-", stdin=json.dumps([{"action": "delete", "level": "project", "filename": SHARED}])
        )
    assert res.code == 0, res.err
    doctor = ann.cli("doctor")
    assert doctor.code == 0, doctor.out
    assert "deleted here" not in doctor.out

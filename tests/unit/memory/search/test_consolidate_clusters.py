"""Clusters of likely duplicates found locally, over the search cache."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from memory.constants import Level
from memory.search.clusters import find_clusters
from memory.search.engine import MemorySearch
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env, write_note

WORDS = (
    "build test release deploy parser lexer config cache docker python module service api client "
    "server database query index schema migration logging metrics auth token user session branch"
).split()
DUPS = {
    "project_knowledge_dup-a.md": (
        "Use pnpm, not npm",
        "This project uses pnpm for installs; npm breaks the lockfile.",
    ),
    "project_knowledge_dup-b.md": (
        "Package manager is pnpm",
        "Use pnpm install, never npm: npm breaks the lockfile.",
    ),
    "project_knowledge_dup-c.md": (
        "pnpm only",
        "The project installs with pnpm; npm would break the lockfile.",
    ),
}


def fill(stores: MemoryStores, n: int, seed: int = 7) -> None:
    """``n`` cards over a shared vocabulary (common words) plus a few words of their own."""
    rng = random.Random(seed)
    own = [f"w{i}q" for i in range(4 * n)]
    for i in range(n):
        body = (
            " ".join(rng.choice(WORDS) for _ in range(10))
            + " "
            + " ".join(rng.choice(own) for _ in range(10))
        )
        write_note(
            stores,
            Level.PROJECT,
            f"project_knowledge_c{i:05d}.md",
            f"Note {i} {rng.choice(own)}",
            body,
            summary=" ".join(rng.choice(WORDS) for _ in range(5)),
        )


def add_dups(stores: MemoryStores) -> None:
    for name, (title, body) in DUPS.items():
        write_note(stores, Level.PROJECT, name, title, body, summary="pnpm, not npm: the lockfile")


def test_three_duplicates_are_one_cluster_among_2000_cards(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    fill(stores, 2000)
    add_dups(stores)
    search = MemorySearch(stores)
    try:
        assert find_clusters(search, Level.PROJECT) == [sorted(DUPS)]
    finally:
        search.close()


def test_cards_sharing_a_few_words_are_not_clustered(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    fill(stores, 200)
    # Unrelated, but each shares several words with the others (release, python, module, docker …).
    write_note(
        stores,
        Level.PROJECT,
        "project_knowledge_u1.md",
        "Docker build cache",
        "The docker build uses a release cache for the python module of the gateway.",
    )
    write_note(
        stores,
        Level.PROJECT,
        "project_knowledge_u2.md",
        "Release branch review",
        "Every release branch needs a review before the python module of the scheduler ships.",
    )
    write_note(
        stores,
        Level.PROJECT,
        "project_knowledge_u3.md",
        "Python module layout",
        "The python module of the exporter keeps its release notes next to the docker files.",
    )
    search = MemorySearch(stores)
    try:
        assert find_clusters(search, Level.PROJECT) == []
        add_dups(stores)
        assert find_clusters(search, Level.PROJECT) == [sorted(DUPS)], "the same cache finds real duplicates"
    finally:
        search.close()


def test_an_untrusted_project_store_has_no_clusters(tmp_path: Path) -> None:
    stores = make_env(tmp_path, trusted=False)
    add_dups(stores)
    search = MemorySearch(stores)
    try:
        assert find_clusters(search, Level.PROJECT) == []
        assert not search.cache(Level.PROJECT).path.exists(), "its cache is not even built"
    finally:
        search.close()


def test_many_alike_cards_give_bounded_clusters(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    for i in range(10):
        write_note(
            stores,
            Level.PROJECT,
            f"project_knowledge_same{i}.md",
            "Use pnpm, not npm",
            "This project uses pnpm for installs; npm breaks the lockfile.",
            summary="pnpm, not npm",
        )
    search = MemorySearch(stores)
    try:
        clusters = find_clusters(search, Level.PROJECT, max_size=4, max_clusters=2)
    finally:
        search.close()
    assert len(clusters) == 2 and all(2 <= len(c) <= 4 for c in clusters)
    assert not set(clusters[0]) & set(clusters[1])


@pytest.mark.timeout(300)
def test_clusters_at_10000_cards_take_bounded_time(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    fill(stores, 10_000)
    add_dups(stores)
    search = MemorySearch(stores)
    try:
        search.cache(Level.PROJECT).count()  # the cache is built first: that is not clustering's time
        start = time.perf_counter()
        clusters = find_clusters(search, Level.PROJECT)
        took = time.perf_counter() - start
    finally:
        search.close()
    assert clusters == [sorted(DUPS)]
    # About 2 s on a quiet machine (2,000 seeds); generous for a busy one.
    assert took < 60, took

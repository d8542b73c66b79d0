"""`make bench`: memory at scale: recall and search per turn, the search cache's rebuild, and
recall quality on a generated labelled set.

The labelled set (``labelled_set``, fixed seed; the unit tests use a small one): a store of
cards made of a shared vocabulary (the words of everyday coding talk), some of them **targets**,
each about a distinctive topic (an invented word) named in its body, and for some also in its
title or summary; **distractors** share the queries' common words and a topic's companion word
("the frobnicator *calibration*"). Each target has a query: a natural sentence naming its topic
amid filler; and **unrelated** queries (common words, words no card holds) should recall nothing.

* recall per turn at 10,000 cards, warm: ``MemorySearch.recall`` of the queries, one after another
  in one process (the runtime keeps one), median ms; target ≤ 20;
* search per query at 10,000 cards, warm: ``MemorySearch.search`` of the same messages, median
  ms; target ≤ 10;
* cache rebuild at 10,000 cards: ``SearchCache.rebuild()`` (every card read and indexed), median s;
* recall quality: the share of targets in recall's top 5 (target ≥ 0.9) and the share of
  unrelated queries that recalled anything (target ≤ 0.05).

    python -m tests.bench fig_scale --no-readme
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tests.bench.common import Figure, at_least, at_most, median, private_env

if TYPE_CHECKING:
    from memory.search.engine import MemorySearch
    from memory.store.stores import MemoryStores

CARDS = 10_000
TARGETS = 200
UNRELATED = 100
RECALL_TARGET_MS = 20.0
SEARCH_TARGET_MS = 10.0
QUALITY_TARGET = 0.9
FALSE_POSITIVE_TARGET = 0.05
SEED = 18

COMMON = """build test release deploy parser lexer config cache docker python module service api client
server database query index schema migration logging metrics auth token user session branch merge
commit review lint format error retry timeout handler request response payload worker queue thread
process memory file folder path script command option flag value default setting version update
install package library import function class method object field type check fix bug issue change
feature run start stop load save read write open close send receive parse render""".split()
# Companion words: each in about one card in a hundred; a topic's query names one of them too.
COMPANIONS = """calibration rotation threshold handshake checksum snapshot rollout quota manifest
ledger gateway sandbox fixture adapter bridge tunnel shard replica cursor buffer watermark
beacon trigger pipeline harness profile budget window lease ticket""".split()
FILLER = """could you please help me figure out why the way we did this yesterday seems wrong and what
should happen next time when I try it again on my laptop before lunch with the team""".split()
UNRELATED_WORDS = """weather paris holiday recipe football guitar garden coffee mountain novel painting
birthday train museum weekend vacation picnic concert""".split()
_SYLLABLES = [c + v for c in "bdklmnrstvz" for v in "aeiou"]
_ENDINGS = "x n r l th sk nd rk".split()


@dataclass(frozen=True)
class Labelled:
    """A generated store's cards and its queries."""

    cards: list[tuple[str, str, str, str]]  # filename, title, summary, body
    queries: list[tuple[str, str]]  # (query, the target card's filename)
    unrelated: list[str]


def _topic(rng: random.Random, used: set[str]) -> str:
    while True:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(3)) + rng.choice(_ENDINGS)
        if word not in used:
            used.add(word)
            return word


def _words(rng: random.Random, pool: list[str], n: int) -> str:
    return " ".join(rng.choice(pool) for _ in range(n))


def labelled_set(
    cards: int = CARDS, targets: int = TARGETS, unrelated: int = UNRELATED, seed: int = SEED
) -> Labelled:
    """The labelled set (see the module's docstring); the same for the same arguments."""
    rng = random.Random(seed)
    used: set[str] = set()
    out: list[tuple[str, str, str, str]] = []
    queries: list[tuple[str, str]] = []
    for i in range(targets):
        topic, companion = _topic(rng, used), rng.choice(COMPANIONS)
        where = i % 3  # a third name the topic in the title, a third in the summary, a third only in the body
        title = f"The {topic} {companion}" if where == 0 else f"Notes on {_words(rng, COMMON, 2)}"
        summary = f"How the {topic} works" if where == 1 else _words(rng, COMMON, 6)
        body = (
            f"{_words(rng, COMMON, 20)}. The {topic} {companion} must be checked before each "
            f"{rng.choice(COMMON)}. {_words(rng, COMMON, 20)}.\n"
        )
        name = f"project_knowledge_target-{i:04d}.md"
        out.append((name, title, summary, body))
        filler = rng.sample(FILLER, 6)
        query = (
            f"{' '.join(filler[:3]).capitalize()}: how do I {rng.choice(COMMON)} the {topic} "
            f"{companion} for the {_words(rng, COMMON, 2)}, {' '.join(filler[3:])}?"
        )
        queries.append((query, name))
    for i in range(cards - targets):
        # Distractors: common words, and one in ten a companion word too.
        extra = f" The {rng.choice(COMPANIONS)} is fine." if i % 10 == 0 else ""
        out.append(
            (
                f"project_knowledge_card-{i:05d}.md",
                f"Card {i} {_words(rng, COMMON, 2)}",
                _words(rng, COMMON, 6),
                f"{_words(rng, COMMON, 30)}.{extra}\n",
            )
        )
    unrelated_q = [
        f"{' '.join(rng.sample(FILLER, 5))} {' '.join(rng.sample(UNRELATED_WORDS, 2))} "
        f"{_words(rng, COMMON, 3)} {rng.choice(COMPANIONS)}?"
        for _ in range(unrelated)
    ]
    return Labelled(cards=out, queries=queries, unrelated=unrelated_q)


def write_set(stores: MemoryStores, data: Labelled) -> None:
    """The set's cards as project cards (written directly: the bytes a transaction writes)."""
    from memory.constants import NoteType
    from memory.model import NoteMeta
    from memory.store.frontmatter import dump_note

    folder = stores.project.dir
    folder.mkdir(parents=True, exist_ok=True)
    for name, title, summary, body in data.cards:
        meta = NoteMeta(
            title=title,
            summary=summary,
            type=NoteType.PROJECT_KNOWLEDGE,
            created="2026-01-01T00:00:00Z",
            updated="2026-01-01T00:00:00Z",
            source="seed",
        )
        (folder / name).write_bytes(dump_note(meta, body))


def quality(search: MemorySearch, data: Labelled, limit: int = 5) -> tuple[float, float]:
    """(share of targets in recall's top ``limit``, share of unrelated queries recalling anything);
    nothing is treated as already shown."""
    found = sum(
        any(h.filename == name for h in search.recall(q, (), limit=limit)) for q, name in data.queries
    )
    false = sum(bool(search.recall(q, (), limit=limit)) for q in data.unrelated)
    return found / max(1, len(data.queries)), false / max(1, len(data.unrelated))


def _log(msg: str) -> None:
    print(f"  fig_scale: {msg}", file=sys.stderr, flush=True)


def _store(root: Path) -> MemoryStores:
    from memory.store.stores import MemoryStores

    ws = root / "ws"
    (ws / ".git").mkdir(parents=True)
    stores = MemoryStores(ws)
    stores.trust_project()
    return stores


def figures(runs: int = 5) -> list[Figure]:
    from memory.search.engine import MemorySearch

    with private_env() as root:
        t = time.perf_counter()
        data = labelled_set()
        stores = _store(root)
        write_set(stores, data)
        _log(f"{len(data.cards):,} cards written in {time.perf_counter() - t:.1f} s")
        search = MemorySearch(stores)
        cache = search.cache("project")
        shown = stores.prompt_index().shown
        rebuilds: list[float] = []
        per_turn: list[float] = []
        per_search: list[float] = []
        turns = [q for q, _ in data.queries[:20]] + data.unrelated[:10]
        for run in range(runs):
            # Side by side: a rebuild, then warm turns against the rebuilt cache.
            t = time.perf_counter()
            n = cache.rebuild()
            rebuilds.append(time.perf_counter() - t)
            if n != len(data.cards):
                raise RuntimeError(f"the rebuild indexed {n} cards, expected {len(data.cards)}")
            search.recall(turns[0], shown)  # the first turn after a rebuild warms SQLite's pages
            for q in turns:
                t = time.perf_counter()
                search.recall(q, shown)
                per_turn.append(time.perf_counter() - t)
                t = time.perf_counter()
                search.search(q)  # memory search / search_memory: bm25, the exact-word raise, the lines
                per_search.append(time.perf_counter() - t)
            _log(
                f"run {run + 1}/{runs}: rebuild {rebuilds[-1]:.1f} s, "
                f"recall median {1000 * median(per_turn):.1f} ms"
            )
        share, false = quality(search, data)
        search.close()
    recall_ms = 1000 * median(per_turn)
    size = f"{len(data.cards):,} cards ({TARGETS} targets)"
    return [
        at_most(
            "memory recall per turn, 10,000 cards, warm",
            recall_ms,
            RECALL_TARGET_MS,
            "ms",
            f"MemorySearch.recall of a user message, median of {len(per_turn)} turns; {size}; "
            f"max {1000 * max(per_turn):.1f} ms",
        ),
        at_most(
            "memory search per query, 10,000 cards, warm",
            1000 * median(per_search),
            SEARCH_TARGET_MS,
            "ms",
            f"MemorySearch.search (limit 10) of the same messages, median of {len(per_search)}; {size}; "
            f"max {1000 * max(per_search):.1f} ms",
        ),
        Figure(
            "memory search cache rebuild, 10,000 cards",
            median(rebuilds),
            "s",
            "reported",
            True,
            f"SearchCache.rebuild(): every card read and indexed in SQLite FTS5, median of {len(rebuilds)}",
        ),
        at_least(
            "memory recall quality: targets in the top 5",
            share,
            QUALITY_TARGET,
            "",
            f"{len(data.queries)} queries naming a target's topic amid filler, distractors sharing "
            f"their words; seed {SEED}; {size}",
        ),
        at_most(
            "memory recall false positives: unrelated queries recalling a card",
            false,
            FALSE_POSITIVE_TARGET,
            "",
            f"{len(data.unrelated)} queries of common and unknown words",
        ),
    ]

"""Clusters of likely duplicates or contradictions in one store, found locally.

A consolidation job sends the memory model only these clusters' bodies, so they are found
without a model call, over the search cache. A card's terms are the query words of its title,
summary and the first part of its body; each weighs its inverse document frequency (bm25's,
like memory/search/engine.py), and words in more than one card in twenty are left out (common
words say nothing about a duplicate). Card B *covers* card A by the share of A's term weight
that B's indexed text holds. Two cards are linked when each covers most of the other, or one
covers nearly all of the other and the other a fair part of it (a short card restated inside a
longer one), and they share at least a few terms (two short cards sharing two words are not
duplicates). Links join cards into clusters, strongest first.

Bounded at any store size: only the ``max_seeds`` most recently updated cards are examined (a
duplicate is usually new: extraction wrote it again), each with at most ``MAX_QUERY_TERMS``
terms, and each distinct term is asked of the cache once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from memory.constants import Level
from memory.search.engine import MemorySearch
from memory.search.terms import fts_phrase, query_terms

__all__ = ["BODY_HEAD_CHARS", "find_clusters"]

BODY_HEAD_CHARS = 1500  # the part of a body whose words describe the card
_COMMON_SHARE = 20
_MUTUAL = 0.55  # each covers at least this share of the other …
_ONE_WAY = 0.8  # … or one covers this much of the other, …
_ONE_WAY_MIN = 0.35  # … and the other at least this much of it
_MIN_SHARED_TERMS = 3
# Words search keeps but a duplicate is not judged by: negations, modal and filler words say how
# a card puts its point, and two cards stating one fact put it differently ("not npm", "npm
# would break"); the memory model, not this count, reads what they mean.
_FILLER = frozenset(
    """about above after again against all also any because before below between both can could
    done down during each few further get got here just let like more most no not now off once
    only other out over own same should some such then there through too under until up use used
    using very want when where while will would yes ok okay know tell make need see look one two
    way thing things something anything""".split()
)


def _idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


class _Finder:
    def __init__(self, search: MemorySearch, level: Level) -> None:
        self.cache = search.cache(level)
        self.n = self.cache.count()
        self.cap = max(50, self.n // _COMMON_SHARE)
        self._rows: dict[str, frozenset[int] | None] = {}  # term -> ids holding it (None: common)
        self._terms: dict[int, list[str]] = {}

    def rows_of(self, terms: Iterable[str]) -> None:
        """Ask the cache for the terms not asked yet, in one call."""
        todo = [t for t in dict.fromkeys(terms) if t not in self._rows]
        if not todo:
            return
        _, per_term = self.cache.term_rows([fts_phrase(t) for t in todo], self.cap)
        for term, (rows, _) in zip(todo, per_term, strict=True):
            self._rows[term] = None if len(rows) > self.cap else frozenset(rows)

    def terms_of(self, ids: Iterable[int]) -> None:
        todo = [i for i in ids if i not in self._terms]
        for rid, (title, summary, body) in self.cache.texts(todo).items():
            terms = query_terms(f"{title} {summary} {body[:BODY_HEAD_CHARS]}")
            self._terms[rid] = [t for t in terms if t not in _FILLER]
        for rid in todo:
            self._terms.setdefault(rid, [])
        self.rows_of(t for rid in todo for t in self._terms[rid])

    def weighted(self, rid: int) -> list[tuple[frozenset[int], float]]:
        """The card's distinctive terms: (ids holding it, weight)."""
        out = []
        for term in self._terms.get(rid, []):
            rows = self._rows.get(term)
            if rows is not None:
                out.append((rows, _idf(self.n, len(rows))))
        return out

    def covers(self, rid: int) -> tuple[float, dict[int, tuple[float, int]]]:
        """(the card's total term weight, other id -> (weight it holds, terms it holds))."""
        total = 0.0
        got: dict[int, tuple[float, int]] = {}
        for rows, w in self.weighted(rid):
            total += w
            for other in rows:
                if other != rid:
                    s, k = got.get(other, (0.0, 0))
                    got[other] = (s + w, k + 1)
        return total, got

    def share(self, rid: int, other: int) -> float:
        """The share of ``rid``'s term weight that ``other`` holds."""
        total = held = 0.0
        for rows, w in self.weighted(rid):
            total += w
            if other in rows:
                held += w
        return held / total if total else 0.0


def _linked(a: float, b: float) -> bool:
    lo, hi = min(a, b), max(a, b)
    return lo >= _MUTUAL or (hi >= _ONE_WAY and lo >= _ONE_WAY_MIN)


def _seeds(search: MemorySearch, level: Level, max_seeds: int) -> list[str]:
    """The filenames of the most recently updated cards, newest first."""
    cards = [
        (meta.updated or "", name)
        for name, line, _, meta, _ in search.stores.store(level).keyed_cards()
        if line is not None and meta is not None
    ]
    cards.sort(reverse=True)
    return [name for _, name in cards[: max(0, max_seeds)]]


def _edges(finder: _Finder, seed_ids: list[int]) -> dict[tuple[int, int], float]:
    edges: dict[tuple[int, int], float] = {}
    for rid in seed_ids:
        total, got = finder.covers(rid)
        if total <= 0:
            continue
        candidates = [o for o, (s, k) in got.items() if k >= _MIN_SHARED_TERMS and s / total >= _ONE_WAY_MIN]
        finder.terms_of(candidates)
        for other in candidates:
            pair = (min(rid, other), max(rid, other))
            if pair in edges:
                continue
            fwd, back = got[other][0] / total, finder.share(other, rid)
            if _linked(fwd, back):
                edges[pair] = (fwd + back) / 2
    return edges


def _group(edges: dict[tuple[int, int], float], max_size: int) -> list[tuple[float, list[int]]]:
    """Union-find over the links, strongest first, never growing a group past ``max_size``: a
    long chain of cards that each resemble the next (shared boilerplate) is not one duplicate,
    and one request must stay bounded; its strongest pairs are the likely duplicates."""
    parent: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    strength: dict[int, list[float]] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for (a, b), s in sorted(edges.items(), key=lambda kv: (-kv[1], kv[0])):
        ra, rb = find(a), find(b)
        if ra == rb:
            strength[ra].append(s)
            continue
        ma, mb = members.get(ra, [a]), members.get(rb, [b])
        if len(ma) + len(mb) > max_size:
            continue
        parent[rb] = ra
        members[ra] = ma + mb
        strength[ra] = strength.get(ra, []) + strength.pop(rb, []) + [s]
        members.pop(rb, None)
    out = [(sum(strength[r]) / len(strength[r]), sorted(m)) for r, m in members.items() if len(m) >= 2]
    # Best first: the most alike, then the bigger (more cards cleaned by one answer).
    out.sort(key=lambda sm: (-round(sm[0], 6), -len(sm[1]), sm[1]))
    return out


def find_clusters(
    search: MemorySearch,
    level: Level | str,
    *,
    max_clusters: int = 12,
    max_size: int = 6,
    max_seeds: int = 2000,
) -> list[list[str]]:
    """Groups (2..``max_size`` filenames, sorted) of likely duplicates or contradictions in the
    ``level`` store, best first, at most ``max_clusters``. None for a store search may not look
    at (an untrusted project store): an empty list."""
    lv = Level(level)
    if lv not in search.levels() or max_clusters <= 0 or max_size < 2:
        return []
    finder = _Finder(search, lv)
    if finder.n < 2:
        return []
    ids = finder.cache.ids_of(_seeds(search, lv, max_seeds))
    seed_ids = list(ids.values())
    finder.terms_of(seed_ids)
    groups = _group(_edges(finder, seed_ids), max_size)[:max_clusters]
    names = {rid: row[1] for rid, row in finder.cache.rows([r for _, g in groups for r in g]).items()}
    out = [sorted(names[r] for r in g if r in names) for _, g in groups]
    return [g for g in out if len(g) >= 2]

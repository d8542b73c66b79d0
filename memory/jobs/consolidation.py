"""Consolidation jobs: what the manager and the pipeline need beyond extraction.

A consolidation cleans one store: clusters of likely duplicates are found locally
(memory/search/clusters.py), spooled as one job, and the pipeline asks the memory model with
the clusters' current bodies. Its answer is ordinary operations, kept to the job's store and
the clusters' cards. The automatic trigger counts each store's new cards since its last
consolidation (``Baselines``), kept per store folder in ``$PSEUDOCLAUDE_HOME/state/``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memory.constants import Action, Level
from memory.extract.consolidate import ClusterCard, bounded_bodies
from memory.jobs.spool import Job, JobMode, Spool, make_consolidation_job
from memory.model import Operation, Rejection, dump_op
from memory.search.clusters import find_clusters
from memory.search.engine import MemorySearch
from memory.store.fs import FS
from memory.store.locks import file_lock
from memory.store.store import StoreError
from memory.store.stores import MemoryStores
from memory.store.trust import UNTRUSTED_REASON
from memory.text.names import quote

__all__ = [
    "STATE_FILE",
    "Baselines",
    "ConsolidateOutcome",
    "cluster_cards",
    "consolidation_label",
    "consolidation_scope",
    "due_levels",
    "spool_consolidations",
    "store_size",
]

log = logging.getLogger(__name__)

STATE_FILE = "consolidate.json"  # the older one-file state, read once to carry its counts over
_MAX_STATE_BYTES = 1 << 20
_LOCK_S = 10.0


@dataclass(frozen=True)
class ConsolidateOutcome:
    """What a consolidation request became: a spooled job (``job_id``), or why none."""

    level: Level
    job_id: str | None
    clusters: int
    cards: int
    reason: str


def consolidation_label(job: Job) -> str:
    """The history label's part that says a batch is a consolidation."""
    if job.purpose != "consolidate" or job.level is None:
        return ""
    return f" (consolidation of the {job.level.value} store)"


def store_size(stores: MemoryStores, level: Level) -> int:
    """The cards of a store a prompt could get (the fast reader: no card body is parsed)."""
    return sum(
        1
        for _, line, _, meta, _ in stores.store(level).keyed_cards()
        if line is not None and meta is not None
    )


def cluster_cards(
    stores: MemoryStores, level: Level, clusters: Sequence[Sequence[str]]
) -> tuple[list[ClusterCard], list[list[str]]]:
    """The clusters' cards as they are now, and the clusters that still hold two cards: a card
    gone (or unreadable) since the job was made is skipped."""
    cards: dict[str, ClusterCard] = {}
    kept: list[list[str]] = []
    for cluster in clusters:
        here: list[str] = []
        for name in cluster:
            if name in cards:
                here.append(name)
                continue
            try:
                note = stores.read_note(level, name)
            except (StoreError, OSError):
                continue
            if note.unparsed:
                continue
            cards[name] = (name, note.meta.title, note.meta.summary, note.meta.type.value, note.body)
            here.append(name)
        if len(here) >= 2:
            kept.append(here)
    used = {n for c in kept for n in c}
    return [c for n, c in cards.items() if n in used], kept


def _reject(i: int, op: Operation, why: str) -> Rejection:
    return Rejection(index=i, reason=f"op {i}: {why}", op=dump_op(op))


def consolidation_scope(
    stores: MemoryStores, job: Job, pairs: list[tuple[int, Operation]]
) -> tuple[list[tuple[int, Operation]], list[Rejection]]:
    """The ops a consolidation may make: on its store only; an update or delete only of a
    cluster's card; never an update of a card whose body the model saw cut (it would lose
    the end)."""
    level = job.level
    members = {n for c in job.clusters for n in c}
    cards, _ = cluster_cards(stores, level, job.clusters) if level is not None else ([], [])
    _, cut = bounded_bodies(cards)
    where = f"the {level.value} store" if level is not None else "one store"
    out: list[tuple[int, Operation]] = []
    rejected: list[Rejection] = []
    for i, op in pairs:
        if op.action is Action.NOOP:
            out.append((i, op))
        elif op.level is not level:
            rejected.append(_reject(i, op, f"a consolidation of {where} changes only that store's cards"))
        elif op.action in (Action.UPDATE, Action.DELETE) and op.filename not in members:
            rejected.append(_reject(i, op, f"{quote(op.filename)} is not one of the consolidated cards"))
        elif op.action is Action.UPDATE and op.filename in cut:
            rejected.append(
                _reject(i, op, f"{quote(op.filename)} was sent cut: an update would lose its end")
            )
        else:
            out.append((i, op))
    return out, rejected


class Baselines:
    """Per store folder, the new cards counted since its last consolidation (the automatic
    trigger's count), kept in that store's own state file under ``$PSEUDOCLAUDE_HOME/state/``.

    Each look adds how much the store grew since the look before (its size then is kept too):
    cards from this app, its worker, another window, a ``memory`` command or ``git pull`` all
    count, and a card deleted never takes a count back. The first look at a store counts from
    its size then; a count kept in the older one-file state (``consolidate.json``: the size at
    the last consolidation) carries over."""

    def __init__(self, home: Path, fs: FS) -> None:
        self.dir = Path(home) / "state"
        self.legacy = self.dir / STATE_FILE
        self.locks = Path(home) / "locks"
        self.fs = fs
        self._lock = threading.Lock()

    def path(self, store_dir: Path) -> Path:
        return self.dir / f"consolidate-{_digest(store_dir)}.json"

    def _read(self, path: Path, key: str) -> tuple[int, int] | None:
        """(cards at the last look, new cards since the last consolidation), None when unknown."""
        try:
            raw = json.loads(self.fs.read_bytes(path, max_bytes=_MAX_STATE_BYTES))
        except FileNotFoundError:
            return self._legacy(key)
        except (OSError, ValueError) as e:
            # Derived state: a damaged file only restarts the count.
            log.warning("memory: %s is unreadable (%s); counting new cards from now", path, e)
            return None
        got = raw if isinstance(raw, dict) and raw.get("store") == key else {}
        seen, new = got.get("seen"), got.get("new")
        if not (isinstance(seen, int) and isinstance(new, int) and _count(seen) and _count(new)):
            return None
        return seen, new

    def _legacy(self, key: str) -> tuple[int, int] | None:
        try:
            raw = json.loads(self.fs.read_bytes(self.legacy, max_bytes=_MAX_STATE_BYTES))
        except (OSError, ValueError):
            return None
        base = raw.get(key) if isinstance(raw, dict) else None
        return (int(base), 0) if isinstance(base, int) and _count(base) else None

    def _write(self, path: Path, key: str, seen: int, new: int) -> None:
        self.fs.makedirs(path.parent, 0o700)
        data = {"store": key, "seen": seen, "new": new}
        self.fs.atomic_write(path, json.dumps(data, sort_keys=True, indent=1).encode(), 0o600)

    def _update(self, store_dir: Path, fn: Callable[[tuple[int, int] | None], tuple[int, int]]) -> int:
        """``fn`` of the kept (seen, new), written back when it changed; returns the new count.
        Two processes on one store take turns (a file lock), so no look is lost."""
        key, path = os.path.realpath(store_dir), self.path(store_dir)
        self.fs.makedirs(self.locks, 0o700)
        with self._lock, file_lock(self.locks / f"{path.stem}.lock", _LOCK_S):
            old = self._read(path, key)
            seen, new = fn(old)
            if (seen, new) != old or not self.fs.exists(path):
                self._write(path, key, seen, new)
            return new

    def new_cards(self, store_dir: Path, count: int) -> int:
        """Look at a store of ``count`` cards now: its new cards since the last consolidation."""

        def look(old: tuple[int, int] | None) -> tuple[int, int]:
            if old is None:
                return count, 0  # first look: counted from now
            seen, new = old
            return count, new + max(0, count - seen)

        return self._update(store_dir, look)

    def reset(self, store_dir: Path, count: int) -> None:
        """A consolidation was made (or found nothing) at ``count`` cards."""
        self._update(store_dir, lambda _: (count, 0))


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _digest(store_dir: Path) -> str:
    return hashlib.sha256(os.path.realpath(store_dir).encode("utf-8", "surrogatepass")).hexdigest()[:20]


def spool_consolidations(
    search: MemorySearch,
    spool: Spool,
    baselines: Baselines,
    level: Level | str | None,
    *,
    session: str,
    mode: JobMode,
    touch: Callable[[str, Job | None], None],
) -> list[ConsolidateOutcome]:
    """One consolidation job spooled per store (``level``, or every store search may look at)
    with likely duplicates; each store's count becomes its new baseline. Blocking."""
    stores = search.stores
    levels = search.levels(level)
    if level is not None and not levels:
        lv = Level(level)
        return [
            ConsolidateOutcome(
                lv, None, 0, 0, f"the {lv.value} store cannot be consolidated: {UNTRUSTED_REASON}"
            )
        ]
    out: list[ConsolidateOutcome] = []
    for lv in levels:
        clusters = find_clusters(search, lv)
        count = store_size(stores, lv)
        baselines.reset(stores.store(lv).dir, count)
        if not clusters:
            why = (
                f"no likely duplicates among {count} {lv.value} cards"
                if count
                else f"the {lv.value} store has no cards"
            )
            out.append(ConsolidateOutcome(lv, None, 0, 0, why))
            continue
        job = make_consolidation_job(stores.paths.workspace, lv, clusters, session=session, mode=mode)
        spool.submit(job)
        touch(job.id, job)
        cards = len({n for c in clusters for n in c})
        out.append(ConsolidateOutcome(lv, job.id, len(clusters), cards, job.excerpt()))
    return out


def due_levels(search: MemorySearch, spool: Spool, baselines: Baselines, after: int) -> list[Level]:
    """The stores grown by ``after`` cards since their last consolidation, without a
    consolidation job spooled. Blocking."""
    stores = search.stores
    spooled = {
        e.job.level
        for e in spool.list(stores.paths.workspace, include_orphans=False)
        if e.job is not None and e.job.purpose == "consolidate"
    }
    # Every store is looked at, one with a job spooled too: its growth meanwhile still counts.
    new = {lv: baselines.new_cards(stores.store(lv).dir, store_size(stores, lv)) for lv in search.levels()}
    return [lv for lv, n in new.items() if lv not in spooled and n >= after]

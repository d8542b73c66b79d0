"""The two-store batch that the fault, crash and kill tests break at every step."""

from __future__ import annotations

from pathlib import Path

from memory.store.fs import FS
from memory.store.stores import MemoryStores
from tests.support.memtools import create, make_env, op, stores_state


def seeded(root: Path, fs: FS | None = None) -> tuple[MemoryStores, Path]:
    """Stores with a note to update and one to delete on each level, and one spooled job."""
    clean = make_env(root)
    clean.apply(
        [
            (0, create("project", "Upd", "project v1")),
            (1, create("project", "Del", "project doomed")),
            (2, create("user", "Upd", "user v1", type_="user_preference")),
            (3, create("user", "Del", "user doomed", type_="user_preference")),
        ],
        source="seed",
    )
    job = clean.paths.spool_dir / "00000000000000000001-job.json"
    job.parent.mkdir(parents=True, exist_ok=True)
    job.write_text('{"id": "00000000000000000001-job"}')
    return (make_env(root, fs) if fs is not None else clean), job


BATCH = [
    (0, create("project", "New project note", "fresh project fact")),
    (1, op("update", "project", filename="project_knowledge_upd.md", content="project v2")),
    (2, op("delete", "project", filename="project_knowledge_del.md")),
    (3, create("user", "New user note", "fresh user fact", type_="user_preference")),
    (4, op("update", "user", filename="user_preference_upd.md", content="user v2")),
    (5, op("delete", "user", filename="user_preference_del.md")),
]


def run_batch(stores: MemoryStores, job: Path) -> None:
    stores.apply(BATCH, source="batch", jobs=[job])


def reference(
    root: Path,
) -> tuple[tuple[dict[str, bytes], dict[str, bytes]], tuple[dict[str, bytes], dict[str, bytes]], list]:
    """(before state, after state, recorded call log) of a clean run."""
    fs = FS(record=True)
    stores, job = seeded(root, fs)
    before = stores_state(stores)
    fs.log.clear()
    run_batch(stores, job)
    log = list(fs.log)
    return before, stores_state(stores), log

"""Per-user read counts (memory/grounding/usage.py): under ``$PSEUDOCLAUDE_HOME``, per store
folder, safe across processes, and never a reason for a read or a turn to fail."""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
from pathlib import Path
from typing import Any

from memory.grounding.usage import CardUse, UsageLog, use_text
from memory.store.stores import MemoryStores
from tests.unit.memory.grounding.conftest import cited_card

T0 = dt.datetime(2026, 11, 1, 9, 0, 0, tzinfo=dt.UTC)


def test_counts_and_last_read_per_store_folder(tmp_path: Path) -> None:
    log = UsageLog(tmp_path / "home")
    a, b = tmp_path / "ws-a" / "store", tmp_path / "ws-b" / "store"
    log.record_read(a, "x.md", T0)
    log.record_read(a, "x.md", T0 + dt.timedelta(days=2))
    log.record_read(a, "y.md", T0)
    log.record_read(b, "x.md", T0)
    assert log.counts(a) == {
        "x.md": CardUse(reads=2, last_read="2026-11-03T09:00:00Z"),
        "y.md": CardUse(reads=1, last_read="2026-11-01T09:00:00Z"),
    }
    assert log.counts(b) == {"x.md": CardUse(reads=1, last_read="2026-11-01T09:00:00Z")}
    assert log.counts(tmp_path / "never") == {}
    assert oct(os.stat(log.path).st_mode & 0o777) == "0o600"


def test_a_store_is_known_by_its_real_path(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    log = UsageLog(tmp_path / "home")
    log.record_read(tmp_path / "link", "x.md", T0)
    assert log.counts(tmp_path / "real")["x.md"].reads == 1


def test_two_stores_apart_and_the_card_file_unchanged(stores: MemoryStores, isolated_home: Path) -> None:
    name = cited_card(stores, "Makefile")
    before = (stores.project.dir / name).read_bytes()
    stores.record_read("project", name)
    stores.record_read("project", name)
    assert stores.usage_of("project")[name].reads == 2
    assert stores.usage_of("user") == {}
    assert (stores.project.dir / name).read_bytes() == before
    assert stores.usage.path.is_relative_to(isolated_home)


def _increment(home: str, store: str, n: int, start: Any) -> None:
    log = UsageLog(home)
    start.wait(60)  # both processes write at once
    for _ in range(n):
        log.record_read(store, "x.md")


def test_concurrent_increments_from_two_processes_all_count(tmp_path: Path) -> None:
    home, store = str(tmp_path / "home"), str(tmp_path / "store")
    UsageLog(home).record_read(store, "warm.md")  # the database exists before the race
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    procs = [ctx.Process(target=_increment, args=(home, store, 200, start)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    assert UsageLog(home).counts(store)["x.md"].reads == 400


def test_a_damaged_database_is_set_aside_and_counting_starts_afresh(tmp_path: Path) -> None:
    log = UsageLog(tmp_path / "home")
    log.record_read(tmp_path, "x.md", T0)
    garbage = b"this is not a database, not at all" * 200
    for suffix in ("-wal", "-shm"):
        Path(f"{log.path}{suffix}").unlink(missing_ok=True)
    log.path.write_bytes(garbage)
    log.record_read(tmp_path, "x.md", T0)
    assert log.counts(tmp_path) == {"x.md": CardUse(reads=1, last_read="2026-11-01T09:00:00Z")}
    assert Path(f"{log.path}.damaged").read_bytes() == garbage


def test_an_unwritable_home_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("a file where the home folder should be\n")
    log = UsageLog(blocker)
    log.record_read(tmp_path, "x.md")
    assert log.counts(tmp_path) == {}
    assert blocker.read_text() == "a file where the home folder should be\n"


def test_use_text() -> None:
    now = T0 + dt.timedelta(days=3, hours=1)
    assert use_text(None) == "never read"
    assert use_text(CardUse()) == "never read"
    assert use_text(CardUse(reads=12, last_read="2026-11-01T09:00:00Z"), now) == "read 12× · last 3 days ago"
    assert use_text(CardUse(reads=1, last_read="2026-11-01T09:00:00Z"), T0 + dt.timedelta(hours=1)) == (
        "read 1× · last 1 hour ago"
    )
    assert use_text(CardUse(reads=1, last_read="2026-11-01T09:00:00Z"), T0) == "read 1× · last just now"
    assert use_text(CardUse(reads=2, last_read="garbage"), now) == "read 2× · last at an unknown time"

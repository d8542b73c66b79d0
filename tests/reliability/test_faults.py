"""An OSError at every file operation of a two-store batch, once and persistently."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from memory.store.fs import FS
from tests.reliability.scenario import reference, run_batch, seeded
from tests.support.memtools import leftovers, make_env, stores_state


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory):
    # Module-scoped, so outside each test's private HOME: give it one too, or the machine's own
    # git user.name would be written as the reference cards' author (and no test's).
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(tmp_path_factory.mktemp("ref-home")))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        return reference(tmp_path_factory.mktemp("ref"))


def _faulty(k: int, persistent: bool) -> FS:
    calls = {"n": 0}

    def hook(op: str, path: str) -> None:
        n = calls["n"]
        calls["n"] += 1
        if n == k or (persistent and n > k):
            raise OSError(errno.EIO, f"injected fault at {op}", path)

    return FS(hook=hook)


def _check_recovered(root: Path, job: Path, before, after) -> None:
    clean = make_env(root)
    clean.recover()
    state = stores_state(clean)
    assert state in (before, after), "a store is neither entirely before nor entirely after"
    assert leftovers(clean) == []
    # The job completes exactly with the batch: pending while before, gone once after.
    assert job.exists() == (state == before)
    clean.recover()
    assert stores_state(clean) == state


def test_reference_run_is_a_real_two_store_change(ref) -> None:
    before, after, log = ref
    assert before[0] != after[0] and before[1] != after[1]
    assert len(log) > 30


@pytest.mark.parametrize("persistent", [False, True], ids=["once", "persistent"])
def test_fault_at_every_file_operation(tmp_path: Path, ref, persistent: bool) -> None:
    before, after, log = ref
    outcomes = set()
    for k in range(len(log)):
        root = tmp_path / f"k{k}"
        root.mkdir()
        stores, job = seeded(root, _faulty(k, persistent))
        with pytest.raises(OSError):
            run_batch(stores, job)
        if persistent:
            # Recovery on a still-broken disk may fail, but must not make things worse.
            try:
                stores.recover()
            except OSError:
                pass
        _check_recovered(root, job, before, after)
        outcomes.add(stores_state(make_env(root)) == after)
    assert outcomes == {True, False}, "faults both before and after the commit point were exercised"


def test_every_file_is_fsynced_before_rename_and_folder_after(ref) -> None:
    _before, _after, log = ref
    # A create's last step is a hard link (it never replaces), the others renames: same rules.
    renames = [(i, e) for i, e in enumerate(log) if e[0] in ("replace", "link")]
    assert any(e[0] == "link" for _, e in renames)
    assert renames
    for i, (_op, dst, src) in renames:
        if "/.trash/" in dst:
            continue  # moving an existing, already durable note into the trash
        assert ("fsync", src, "") in log[:i], f"{src} renamed before it was fsynced"
        parent = str(Path(dst).parent)
        assert ("fsync_dir", parent, "") in log[i + 1 :], f"{parent} not fsynced after renaming {dst}"
    # The journal rename is the commit point: every staged store file is written before it.
    commit = next(i for i, e in renames if "/journal/" in e[1])
    staged_writes = [i for i, e in enumerate(log) if e[0] == "fsync" and "/.pc-stage-" in e[1]]
    assert staged_writes and max(staged_writes) < commit
    store_puts = [i for i, e in renames if "/memory/" in e[1]]
    assert min(store_puts) > commit

"""Content ids of cited files (memory/grounding/hashing.py): git's blob id for a tracked file
(what a teammate's checkout computes), ``sha256:`` otherwise, cached by the file's stat key."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from memory.constants import Level, NoteType
from memory.grounding.hashing import FileIds, GitProbe, git_blob_id, id_kind
from memory.grounding.staleness import Grounding
from memory.model import NoteMeta
from tests.unit.memory.grounding.conftest import git


def test_a_tracked_files_id_is_what_git_hash_object_prints(repo: Path) -> None:
    (repo / "bin.dat").write_bytes(bytes(range(256)) * 5000)  # binary, over one read chunk
    git(repo, "add", "bin.dat")
    kept, dropped = Grounding(repo, ids=FileIds()).resolve(["Makefile", "src/app.py:1-5", "bin.dat"])
    assert dropped == []
    for cite in kept:
        assert cite.blob == git(repo, "hash-object", cite.path).strip()
        assert id_kind(cite.blob) == "git"
    assert git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_an_untracked_files_id_is_its_sha256(repo: Path) -> None:
    (repo / "notes.txt").write_text("untracked\n")
    (kept,), _ = Grounding(repo, ids=FileIds()).resolve(["notes.txt"])
    assert kept.blob == "sha256:" + hashlib.sha256(b"untracked\n").hexdigest()
    assert id_kind(kept.blob) == "sha256"


def test_tracked_is_asked_by_literal_path(repo: Path) -> None:
    (repo / "*.py").write_text("a star\n")  # a pathspec would match src/app.py too
    assert GitProbe(repo).tracked(["*.py", "Makefile"]) == {"Makefile"}
    assert GitProbe(repo).tracked([]) == set()


def test_file_ids_are_cached_by_stat_key(tmp_path: Path) -> None:
    f = tmp_path / "f.txt"
    f.write_bytes(b"one\n")
    ids = FileIds()
    first = ids.of(str(f), "git")
    assert ids.reads == 1
    assert ids.of(str(f), "git") == first  # warm: a stat, no read
    assert ids.reads == 1
    assert ids.of(str(f), "sha256").startswith("sha256:")  # another kind is another id
    assert ids.reads == 2

    st = os.stat(f)
    f.write_bytes(b"two\n")  # same size; a new mtime, set so it differs on any clock
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert ids.of(str(f), "git") == git_blob_id(b"two\n")
    assert ids.reads == 3

    st = os.stat(f)
    new = tmp_path / "new.txt"
    new.write_bytes(b"six\n")  # same size and mtime: only the inode tells it apart
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, f)
    assert os.stat(f).st_mtime_ns == st.st_mtime_ns and os.stat(f).st_ino != st.st_ino
    assert ids.of(str(f), "git") == git_blob_id(b"six\n")
    assert ids.reads == 4
    assert ids.of(str(f), "git") == git_blob_id(b"six\n")
    assert ids.reads == 4


def test_a_warm_check_reads_no_file(repo: Path) -> None:
    cites, _ = Grounding(repo, ids=FileIds()).resolve(["Makefile", "src/app.py"])
    meta = NoteMeta(
        title="t",
        type=NoteType.PROJECT_KNOWLEDGE,
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        cites=cites,
    )
    cold = Grounding(repo, ids=FileIds())
    assert not cold.check(Level.PROJECT, "x.md", meta).stale
    assert cold.ids.reads == 2
    assert not cold.check(Level.PROJECT, "x.md", meta).stale
    assert cold.ids.reads == 2


def test_git_probe_without_a_repository_knows_nothing(tmp_path: Path) -> None:
    probe = GitProbe(tmp_path)
    assert probe.tracked(["a"]) == set()
    assert probe.index_blobs() == {} and probe.renames(None) == {}
    assert probe.others() is None


def test_git_probe_lists_renames_and_untracked_files(repo: Path) -> None:
    (repo / "new.txt").write_text("n\n")
    git(repo, "mv", "Makefile", "GNUmakefile")
    probe = GitProbe(repo)
    assert probe.renames(None) == {"Makefile": "GNUmakefile"}
    assert probe.others() == ["new.txt"]
    assert probe.index_blobs()[git_blob_id((repo / "GNUmakefile").read_bytes())] == "GNUmakefile"

"""Which paths a card may cite (memory/grounding/confine.py, and ``Grounding.resolve``): the file
tools' confinement. Every refusal is one line that names the path, quoted by ``quote``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory.grounding.confine import MAX_SPEC_CHARS, CiteRefused, confine_cite
from memory.grounding.hashing import FileIds
from memory.grounding.staleness import Grounding
from memory.text.names import quote
from tests.unit.memory.grounding.conftest import cited_card, stores_for


def _grounding(ws: Path, *protected: Path) -> Grounding:
    return Grounding(ws, protected, ids=FileIds())


def _dropped(ws: Path, raw: object, *protected: Path) -> str:
    """The one reason ``raw`` was dropped for (it must be dropped, and alone)."""
    kept, dropped = _grounding(ws, *protected).resolve([raw])
    assert kept == (), kept
    assert len(dropped) == 1, dropped
    reason = dropped[0].reason
    assert "\n" not in reason and reason
    return reason


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("../outside/secret.txt", "leaves the workspace through '..'"),
        ("a/../../outside/secret.txt", "leaves the workspace through '..'"),
        ("src/../../outside/secret.txt", "leaves the workspace through '..'"),
        ("/etc/passwd", "is an absolute path"),
        ("C:\\x", "is an absolute path"),
        ("C:/x", "is an absolute path"),
        ("\\\\server\\share\\x", "is an absolute path"),
        (".git/config", "is inside .git/"),
        (".GIT/config", "is inside .git/"),
        ("src/.Git/HEAD", "is inside .git/"),
        ("src", "is a folder"),
        ("src/", "is a folder"),
        (".", "is the workspace folder itself"),
        ("missing.py", "does not exist in the workspace"),
        ("Make\x00file", "holds a control character"),
        ("Make\x1b[31mfile", "holds a control character"),
        ("Make\nfile", "holds a control character"),
    ],
)
def test_refused_paths_say_why_naming_the_path(repo: Path, outside: Path, raw: str, why: str) -> None:
    (repo / ".GIT").mkdir(exist_ok=True)  # a case-insensitive file system's .git, on any disk
    (repo / ".GIT" / "config").write_text("[core]\n")
    (repo / "src" / ".Git").mkdir()
    (repo / "src" / ".Git" / "HEAD").write_text("ref: x\n")
    reason = _dropped(repo, raw)
    assert why in reason
    assert reason.startswith(quote(raw)), reason


def test_an_empty_or_blank_path_is_refused(repo: Path) -> None:
    assert _dropped(repo, "") == "an empty path"
    assert _dropped(repo, "   ") == "an empty path"


def test_symlinks_leading_out_are_refused_file_and_folder(repo: Path, outside: Path) -> None:
    (repo / "leak.txt").symlink_to(outside / "secret.txt")
    (repo / "out").symlink_to(outside)
    assert "resolves through a symlink outside the workspace" in _dropped(repo, "leak.txt")
    assert "resolves through a symlink outside the workspace" in _dropped(repo, "out/secret.txt")


def test_a_symlink_inside_the_workspace_to_a_file_inside_is_kept(repo: Path) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "Makefile.link").symlink_to(repo / "Makefile")
    (repo / "lib").symlink_to(repo / "src")
    kept, dropped = _grounding(repo).resolve(["docs/Makefile.link", "lib/app.py"])
    assert dropped == []
    assert [c.path for c in kept] == ["docs/Makefile.link", "lib/app.py"]


def test_the_memory_stores_and_the_apps_home_are_never_cited(repo: Path) -> None:
    home = repo / "pchome"  # $PSEUDOCLAUDE_HOME inside the workspace
    stores = stores_for(repo, home)
    name = cited_card(stores)
    (home / "config.toml").write_text("model = 'x'\n")
    grounding = stores.layout.grounding
    for raw in (f".PseudoClaude/memory/{name}", ".PseudoClaude/memory/MEMORY.md", "pchome/config.toml"):
        assert (repo / raw).is_file()
        kept, dropped = grounding.resolve([raw])
        assert kept == ()
        assert [d.reason for d in dropped] == [
            f"{quote(raw)} is inside a memory store or PseudoClaude's own folder"
        ]


def test_a_path_into_a_protected_folder_through_a_symlink_is_refused(repo: Path) -> None:
    home = repo / "pchome"
    stores = stores_for(repo, home)
    cited_card(stores)
    (repo / "mem").symlink_to(repo / ".PseudoClaude" / "memory")
    kept, dropped = stores.layout.grounding.resolve(["mem/MEMORY.md"])
    assert kept == () and "memory store" in dropped[0].reason


def test_a_fifo_is_not_a_regular_file(repo: Path) -> None:
    os.mkfifo(repo / "pipe")
    assert _dropped(repo, "pipe") == f"{quote('pipe')} is not a regular file"


def test_a_too_long_spec_is_refused_and_the_reason_stays_short(repo: Path) -> None:
    raw = "a/" * (MAX_SPEC_CHARS // 2 + 1)
    reason = _dropped(repo, raw)
    assert f"is longer than {MAX_SPEC_CHARS} characters" in reason
    assert len(reason) < 120


def test_a_backwards_line_range_is_refused(repo: Path) -> None:
    assert _dropped(repo, "Makefile:3-1") == f"{quote('Makefile:3-1')}: the line range ends before it starts"


def test_line_ranges_are_kept_with_their_lines(repo: Path) -> None:
    kept, dropped = _grounding(repo).resolve(
        ["Makefile:10-40", "src/app.py:7", {"path": "Makefile", "lines": "2-3"}]
    )
    assert dropped == []
    assert [c.spec for c in kept] == ["Makefile:10-40", "src/app.py:7", "Makefile:2-3"]


def test_a_path_is_normalised_and_given_once(repo: Path) -> None:
    kept, dropped = _grounding(repo).resolve(["./src//app.py", "src/app.py", "src\\app.py"])
    assert dropped == []
    assert [c.path for c in kept] == ["src/app.py"]


def test_a_secret_in_a_refused_path_is_redacted_from_the_reason(repo: Path) -> None:
    key = "sk-ant-api03-" + "Zq7xW2vB9nK4mP8rT1yU6iO3aS5dF0gH" * 2
    reason = _dropped(repo, f"../{key}")
    assert key not in reason and key[:20] not in reason


def test_confine_cite_gives_the_relative_and_real_path(repo: Path) -> None:
    (repo / "link.mk").symlink_to("Makefile")
    found = confine_cite(str(repo), "link.mk", ())
    assert (found.rel, found.real) == ("link.mk", str(repo / "Makefile"))
    with pytest.raises(CiteRefused, match="does not exist"):
        confine_cite(str(repo), "nope", ())

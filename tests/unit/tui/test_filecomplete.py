"""``@path`` completion (app/tui/chat/filecomplete.py): listing, fuzzy ranking, and attaching a file."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from pathlib import Path

import pytest

from app.agent.conversation.attachments import attach
from app.tui.chat.filecomplete import fuzzy, workspace_files

# `ws` here is an empty folder, not the shared git work tree.
pytestmark = pytest.mark.plain_ws


def _files(root: Path, *rels: str) -> None:
    for rel in rels:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"content of {rel}\n")


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)


def test_in_a_git_repo_tracked_and_untracked_files_are_listed_and_ignored_ones_are_not(ws: Path) -> None:
    _git(ws, "init", "-q")
    _files(ws, "src/app.py", "src/gen/out.txt", "notes.md", "debug.log", "keep.log", ".github/ci.yml")
    (ws / ".gitignore").write_text("*.log\n!keep.log\nsrc/gen/\n")
    _git(ws, "add", "src/app.py")
    (ws / "gone.py").write_text("x")
    _git(ws, "add", "gone.py")
    (ws / "gone.py").unlink()  # deleted from the work tree but still in the index

    assert workspace_files(ws) == [".github/ci.yml", ".gitignore", "keep.log", "notes.md", "src/app.py"]


def test_outside_a_git_repo_the_walk_follows_gitignore_files_and_skips_dot_dirs_and_dependencies(
    ws: Path,
) -> None:
    _files(
        ws,
        "main.py",
        "build.log",
        "keep.log",
        "pkg/mod.py",
        "pkg/cache/blob.bin",
        "pkg/sub/x.tmp",
        "pkg/sub/y.py",
        "docs/guide.md",
        "docs/api/ref.md",
        ".hidden/secret.txt",
        "node_modules/dep/index.js",
        "env/lib/site.py",
        "env/pyvenv.cfg",
    )
    (ws / ".gitignore").write_text("# comment\n*.log\n!keep.log\ncache/\n/docs/api\n")
    (ws / "pkg" / ".gitignore").write_text("*.tmp\n")
    assert workspace_files(ws) == [
        ".gitignore",
        "docs/guide.md",
        "keep.log",
        "main.py",
        "pkg/.gitignore",
        "pkg/mod.py",
        "pkg/sub/y.py",
    ]


def test_the_listing_is_bounded_by_its_limit(ws: Path) -> None:
    _files(ws, *[f"d{k}/f{j}.txt" for k in range(5) for j in range(10)])
    assert len(workspace_files(ws, limit=7)) == 7
    _git(ws, "init", "-q")
    assert len(workspace_files(ws, limit=7)) == 7


def test_fuzzy_puts_file_name_prefixes_first_then_path_prefixes_then_substrings_then_scattered() -> None:
    paths = [
        "tests/unit/test_tui_layout.py",
        "app/tui.py",
        "tui/readme.md",
        "docs/about_tui.md",
        "tools/ui_tests.py",
        "unrelated.txt",
    ]
    assert fuzzy("tui", paths) == [
        "app/tui.py",  # the file name starts with it (shortest first)
        "tui/readme.md",  # the path starts with it
        "tests/unit/test_tui_layout.py",  # in the file name, nearer its start
        "docs/about_tui.md",
        "tools/ui_tests.py",  # the letters in order, scattered
    ]
    assert "unrelated.txt" not in fuzzy("tui", paths)


def test_fuzzy_is_case_insensitive_ranks_tight_matches_first_and_respects_the_limit() -> None:
    paths = ["memory/stores.py", "memory/store.py", "misc/t/o/r/e.py", "README.md"]
    assert fuzzy("STORE", paths) == ["memory/store.py", "memory/stores.py", "misc/t/o/r/e.py"]
    assert fuzzy("mstr", paths) == ["memory/store.py", "memory/stores.py", "misc/t/o/r/e.py"]
    assert fuzzy("mem", paths, limit=1) == ["memory/store.py"]
    assert fuzzy("", paths, limit=2) == ["README.md", "memory/store.py"]  # shallowest first


def test_fuzzy_stays_fast_on_fifty_thousand_paths() -> None:
    import time

    paths = [f"pkg{k % 97}/mod{k}/file_{k}.py" for k in range(50_000)]
    t0 = time.perf_counter()
    result = fuzzy("file_4999", paths)
    assert result[0] == "pkg52/mod4999/file_4999.py"
    assert time.perf_counter() - t0 < 1.0  # run on each key press, on the UI thread


async def test_attach_wraps_a_text_file_in_a_block_naming_its_path(ws: Path) -> None:
    _files(ws, "src/app.py")
    block, note = await attach(ws, "src/app.py")
    assert note is None
    assert block == '<attached-file path="src/app.py">\ncontent of src/app.py\n</attached-file>'


async def test_attach_cuts_a_long_file_at_a_line_and_says_so(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {k:05}\n" for k in range(20_000)))  # 220,000 bytes
    block, note = await attach(ws, "big.txt", max_bytes=1000)
    body = block.split("\n", 1)[1].removesuffix("</attached-file>")
    assert len(body.encode()) <= 1000 and body.endswith("\n") and body.startswith("line 00000\n")
    assert note == "@big.txt: attached the first 990 B of 214.8 KiB"
    assert 'cut="first 990 of 220000 bytes"' in block.split("\n", 1)[0]


async def test_attach_refuses_binary_and_non_utf8_files(ws: Path) -> None:
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (ws / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    assert await attach(ws, "img.png") == ("", "@img.png: a binary file, not attached")
    assert await attach(ws, "latin1.txt") == ("", "@latin1.txt: not UTF-8 text, not attached")


async def test_attach_refuses_paths_outside_the_workspace_also_through_a_symlink(
    ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    (ws / "link.txt").symlink_to(outside)
    (ws / "linkdir").symlink_to(tmp_path)
    for rel in ("../secret.txt", str(outside), "link.txt", "linkdir/secret.txt"):
        block, note = await attach(ws, rel)
        assert block == "" and note is not None and "outside the workspace" in note, rel


async def test_attach_follows_a_symlink_that_stays_inside_the_workspace(ws: Path) -> None:
    _files(ws, "real.md")
    (ws / "alias.md").symlink_to(ws / "real.md")
    block, note = await attach(ws, "alias.md")
    assert note is None and "content of real.md" in block


async def test_attach_refuses_folders_missing_files_and_fifos_without_blocking(ws: Path) -> None:
    (ws / "dir").mkdir()
    os.mkfifo(ws / "pipe")
    result: list[tuple[str, str | None]] = []
    t = threading.Thread(target=lambda: result.append(asyncio.run(attach(ws, "pipe"))), daemon=True)
    t.start()
    t.join(5)
    assert result == [("", "@pipe: not a regular file, not attached")]
    assert await attach(ws, "dir") == ("", "@dir: not a regular file, not attached")
    block, note = await attach(ws, "missing.py")
    assert block == "" and note is not None and note.startswith("@missing.py: cannot read")


@pytest.mark.parametrize("rel", ["", "a\0b"])
async def test_attach_refuses_an_empty_or_nul_name(ws: Path, rel: str) -> None:
    assert (await attach(ws, rel))[0] == ""


async def test_attach_notes_show_a_hostile_name_without_terminal_escapes(ws: Path) -> None:
    block, note = await attach(ws, "\x1b]0;pwned\x07x.py")
    assert block == "" and note is not None and "\x1b" not in note and "\x07" not in note


def test_the_walk_ignores_exactly_what_git_ignores(ws: Path) -> None:
    # Rules the walk must read as git does: "**" at either end and between folders, a deeper
    # .gitignore re-including what an outer one ignores, classes, anchoring by an inner "/",
    # escaped "#" and "!", trailing spaces, and folder-only rules that leave same-named files.
    _files(
        ws,
        "a/gen/x.py",
        "a/b/gen/y.py",
        "gen",
        "logs/deep/z.txt",
        "src/keep.tmp",
        "src/drop.tmp",
        "src/v1.bak",
        "src/vx.bak",
        "lib/sub/only.md",
        "sub/only.md",
        "#hash",
        "!bang",
        "spaced",
        "notes.md",
        "src/notes.md",
    )
    (ws / ".gitignore").write_text(
        "**/gen/\nlogs/**\n*.tmp\nsrc/v[0-9].bak\nlib/**/only.md\n\\#hash\n\\!bang\nspaced   \n/notes.md\n"
    )
    (ws / "src" / ".gitignore").write_text("!keep.tmp\n")
    walked = workspace_files(ws)
    _git(ws, "init", "-q")
    assert walked == workspace_files(ws)
    assert walked == [
        ".gitignore",
        "gen",
        "src/.gitignore",
        "src/keep.tmp",
        "src/notes.md",
        "src/vx.bak",
        "sub/only.md",
    ]

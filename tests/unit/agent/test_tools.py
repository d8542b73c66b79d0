"""The agent tools: contract, confinement, bounds, bash process handling, gates."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.agent.permissions.gate import Gate, PermissionDecision, RunAllowances
from app.agent.permissions.rules import PermissionRules
from app.agent.tools import (
    BUILTIN_TOOLS,
    ToolContext,
    ToolResult,
    api_tools,
    files,
    globs,
    run_tool,
    search,
    shell,
)
from memory.constants import Level
from memory.model import MemoryText
from memory.store.store import StoreError
from tests.support.memtools import make_env, write_note

# `ws` here is an empty folder, not the shared git work tree.
pytestmark = pytest.mark.plain_ws


ORDER = [
    "read_file",
    "list_files",
    "grep",
    "write_file",
    "edit_file",
    "bash",
    "read_memory",
    "search_memory",
    "read_result",
    "task",
    "web_fetch",
    "web_search",
    "exit_plan_mode",
    "todo_write",
]

# name -> (required, optional) property names of the tool contract (read_result: the reader of tool
# results kept on disk, `read_result {id, offset?, limit?}`).
CONTRACT = {
    "read_file": ({"path"}, {"offset", "limit"}),
    "list_files": (set(), {"path", "pattern"}),
    "grep": ({"pattern"}, {"path", "glob"}),
    "write_file": ({"path", "content"}, set()),
    "edit_file": ({"path", "old_string", "new_string"}, {"replace_all"}),
    "bash": ({"command"}, {"timeout"}),
    "read_memory": ({"level", "filename"}, {"offset", "limit"}),
    "search_memory": ({"query"}, {"level", "limit"}),
    "read_result": ({"id"}, {"offset", "limit"}),
    "task": ({"description", "prompt"}, set()),
    "web_fetch": ({"url"}, set()),
    "web_search": ({"query"}, {"allowed_domains", "blocked_domains"}),
    "exit_plan_mode": ({"plan"}, set()),
    "todo_write": ({"todos"}, set()),
}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    o = tmp_path / "outside"
    o.mkdir()
    (o / "secret.txt").write_text("top secret\n")
    return Path(os.path.realpath(o))


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=ws)


async def run(ctx: ToolContext, name: str, **inp: Any) -> ToolResult:
    return await run_tool(name, inp, ctx)


def one_line_error(r: ToolResult) -> str:
    assert r.is_error, r.content
    assert "\n" not in r.content and r.content.strip(), r.content
    return r.content


# -- contract ----------------------------------------------------------------------------------


def test_api_tools_names_exactly_the_ten_in_order() -> None:
    tools = api_tools()
    assert [t["name"] for t in tools] == ORDER
    assert BUILTIN_TOOLS.names() == ORDER
    for t in tools:
        assert set(t) == {"name", "description", "input_schema"}
        assert len(t["description"]) > 80


def test_input_schemas_match_the_contract() -> None:
    for t in api_tools():
        required, optional = CONTRACT[t["name"]]
        schema = t["input_schema"]
        assert schema["type"] == "object"
        assert set(schema["properties"]) == required | optional, t["name"]
        assert set(schema.get("required", [])) == required, t["name"]


def test_api_tools_subset_in_contract_order_and_fresh_copies() -> None:
    sub = api_tools(BUILTIN_TOOLS.read_only().names())
    assert [t["name"] for t in sub] == [
        "read_file",
        "list_files",
        "grep",
        "read_memory",
        "search_memory",
        "read_result",
    ]
    sub[0]["input_schema"]["properties"].clear()
    assert api_tools(["read_file"])[0]["input_schema"]["properties"]
    with pytest.raises(ValueError):
        api_tools(["nope"])


def test_kinds_read_only_and_permission() -> None:
    assert set(BUILTIN_TOOLS.read_only().names()) == {
        "read_file",
        "list_files",
        "grep",
        "read_memory",
        "search_memory",
        "read_result",
    }
    assert {t.name for t in BUILTIN_TOOLS if t.asks} == {
        "write_file",
        "edit_file",
        "bash",
        "web_fetch",
        "web_search",
    }
    assert BUILTIN_TOOLS.get("unknown") is None
    assert {t.name: t.kind for t in BUILTIN_TOOLS} == {
        "read_file": "read",
        "list_files": "read",
        "grep": "read",
        "write_file": "write",
        "edit_file": "write",
        "bash": "execute",
        "read_memory": "memory",
        "search_memory": "memory",
        "read_result": "read",
        "task": "interaction",
        "web_fetch": "network",
        "web_search": "network",
        "exit_plan_mode": "interaction",
        "todo_write": "interaction",
    }


async def test_unknown_tool_task_and_non_object_input(ctx: ToolContext) -> None:
    assert "unknown tool" in one_line_error(await run(ctx, "rm_rf"))
    assert "runner" in one_line_error(await run(ctx, "task", description="x", prompt="y"))
    assert "JSON object" in one_line_error(await run_tool("read_file", ["a"], ctx))


@pytest.mark.parametrize(
    ("name", "inp", "needle"),
    [
        ("read_file", {}, "missing required input 'path'"),
        ("read_file", {"path": 3}, "'path' must be a string"),
        ("read_file", {"path": "a", "offset": "2"}, "'offset' must be an integer"),
        ("read_file", {"path": "a", "limit": 0}, "'limit' must be at least 1"),
        ("read_file", {"path": "a", "limit": True}, "'limit' must be an integer"),
        ("grep", {"path": "."}, "missing required input 'pattern'"),
        ("write_file", {"path": "a"}, "missing required input 'content'"),
        ("write_file", {"path": "", "content": "x"}, "'path' must not be empty"),
        ("edit_file", {"path": "a", "old_string": "x"}, "missing required input 'new_string'"),
        (
            "edit_file",
            {"path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"},
            "true or false",
        ),
        ("bash", {"command": ["ls"]}, "'command' must be a string"),
        ("bash", {"command": "true", "timeout": -1}, "greater than 0"),
        ("bash", {"command": "true", "timeout": "5"}, "must be a number"),
        ("read_memory", {"level": "project"}, "missing required input 'filename'"),
        ("list_files", {"pattern": 5}, "'pattern' must be a string"),
    ],
)
async def test_input_validation_one_line_errors(ctx: ToolContext, name: str, inp: dict, needle: str) -> None:
    assert needle in one_line_error(await run_tool(name, inp, ctx))


async def test_unknown_keys_are_ignored(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text("x\n")
    r = await run(ctx, "read_file", path="a.txt", colour="blue")
    assert not r.is_error and r.content == "     1\tx"


# -- confinement -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "sub/../../outside/secret.txt", "..", "/etc/passwd"]
)
async def test_read_escapes_refused(ctx: ToolContext, outside: Path, path: str) -> None:
    (Path(ctx.workspace) / "sub").mkdir()
    msg = one_line_error(await run(ctx, "read_file", path=path))
    assert "outside" in msg or "leaves the workspace" in msg


async def test_absolute_paths_outside_refused_inside_allowed(
    ctx: ToolContext, ws: Path, outside: Path
) -> None:
    assert "outside the workspace" in one_line_error(
        await run(ctx, "read_file", path=str(outside / "secret.txt"))
    )
    (ws / "in.txt").write_text("hello\n")
    assert (await run(ctx, "read_file", path=str(ws / "in.txt"))).content == "     1\thello"
    assert "outside" in one_line_error(
        await run(ctx, "write_file", path=str(outside / "new.txt"), content="x")
    )
    assert not (outside / "new.txt").exists()


async def test_symlinks_out_of_the_workspace_are_never_followed(
    ctx: ToolContext, ws: Path, outside: Path
) -> None:
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "linkdir").symlink_to(outside)
    (ws / "dangling").symlink_to(outside / "not-yet.txt")
    for path in ("link.txt", "linkdir/secret.txt"):
        assert "symlink" in one_line_error(await run(ctx, "read_file", path=path))
    # Writes through a symlinked file, a symlinked parent folder, a dangling link: all refused.
    for path in ("link.txt", "linkdir/new.txt", "linkdir/deeper/new.txt", "dangling"):
        one_line_error(await run(ctx, "write_file", path=path, content="pwned"))
    r = await run(ctx, "edit_file", path="link.txt", old_string="top", new_string="no")
    one_line_error(r)
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    # grep and list_files do not walk into it either.
    assert (await run(ctx, "grep", pattern="top")).content == "[no matches for 'top' in the workspace]"
    assert (await run(ctx, "list_files", pattern="**")).content.splitlines() == [
        "dangling",
        "link.txt",
        "linkdir",
    ]
    assert one_line_error(await run(ctx, "list_files", path="linkdir"))
    assert one_line_error(await run(ctx, "grep", pattern="top", path="linkdir"))


async def test_symlink_inside_the_workspace_is_fine(ctx: ToolContext, ws: Path) -> None:
    (ws / "real.txt").write_text("one\n")
    (ws / "alias.txt").symlink_to("real.txt")
    assert (await run(ctx, "read_file", path="alias.txt")).content == "     1\tone"
    r = await run(ctx, "edit_file", path="alias.txt", old_string="one", new_string="two")
    assert not r.is_error, r.content
    assert (ws / "alias.txt").is_symlink() and (ws / "real.txt").read_text() == "two\n"


async def test_git_folder_write_refused_but_readable(ctx: ToolContext, ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    for path in (".git/config", ".git/hooks/pre-commit", "sub/.git/x", "./.git/../.git/HEAD"):
        assert ".git" in one_line_error(await run(ctx, "write_file", path=path, content="x"))
    assert ".git" in one_line_error(
        await run(ctx, "edit_file", path=".git/config", old_string="core", new_string="x")
    )
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / "sub").exists()
    assert not (await run(ctx, "read_file", path=".git/config")).is_error


async def test_memory_store_write_refused(
    ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ws / ".PseudoClaude" / "memory"
    store.mkdir(parents=True)
    (store / "project_knowledge_a.md").write_text("---\ntitle: a\n---\nbody\n")
    for path in (
        ".PseudoClaude/memory/x.md",
        ".PseudoClaude/memory/project_knowledge_a.md",
        ".PseudoClaude/memory",
    ):
        msg = one_line_error(await run(ctx, "write_file", path=path, content="x"))
        assert "memory" in msg and "read_memory" in msg
    r = await run(
        ctx,
        "edit_file",
        path=".PseudoClaude/memory/project_knowledge_a.md",
        old_string="body",
        new_string="x",
    )
    assert "memory store" in one_line_error(r)
    assert (store / "project_knowledge_a.md").read_text().endswith("body\n")
    # The user store too, should $PSEUDOCLAUDE_HOME lie inside the workspace.
    monkeypatch.setenv("PSEUDOCLAUDE_HOME", str(ws / "home"))
    assert "user memory store" in one_line_error(
        await run(ctx, "write_file", path="home/memory/n.md", content="x")
    )
    assert "own state" in one_line_error(await run(ctx, "write_file", path="home/spool/j.json", content="x"))
    # Reading is fine.
    assert not (await run(ctx, "read_file", path=".PseudoClaude/memory/project_knowledge_a.md")).is_error


async def test_nul_in_path_refused(ctx: ToolContext) -> None:
    assert "NUL" in one_line_error(await run(ctx, "read_file", path="a\x00b"))


# -- read_file ---------------------------------------------------------------------------------


async def test_read_file_numbers_lines_with_offset_and_limit(ctx: ToolContext, ws: Path) -> None:
    (ws / "f.txt").write_text("".join(f"line {i}\r\n" if i == 3 else f"line {i}\n" for i in range(1, 11)))
    r = await run(ctx, "read_file", path="f.txt")
    assert r.content.splitlines()[0] == "     1\tline 1"
    assert r.content.splitlines()[2] == "     3\tline 3"
    assert len(r.content.splitlines()) == 10
    r = await run(ctx, "read_file", path="f.txt", offset=4, limit=3)
    assert r.content.splitlines() == [
        "     4\tline 4",
        "     5\tline 5",
        "     6\tline 6",
        "[showing lines 4–6 of 10; use offset=7 to read on]",
    ]
    r = await run(ctx, "read_file", path="f.txt", offset=9)
    assert r.content == "     9\tline 9\n    10\tline 10"
    assert "past the end" in one_line_error(await run(ctx, "read_file", path="f.txt", offset=11))


async def test_read_file_default_limit_2000_lines(ctx: ToolContext, ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 2501)))
    r = await run(ctx, "read_file", path="big.txt")
    lines = r.content.splitlines()
    assert lines[-2] == "  2000\t2000"
    assert lines[-1] == "[showing lines 1–2000 of 2500; use offset=2001 to read on]"


async def test_read_file_output_bounded_with_note(ws: Path) -> None:
    ctx = ToolContext(workspace=ws, max_output_chars=2000)
    (ws / "f.txt").write_text("".join(f"{'x' * 40} {i}\n" for i in range(1, 5001)))
    r = await run(ctx, "read_file", path="f.txt")
    assert len(r.content) <= 2000
    last_shown = int(r.content.splitlines()[-2].split("\t")[0])
    assert 10 < last_shown < 100
    assert r.content.splitlines()[-1] == (
        f"[output truncated: showing lines 1–{last_shown} of 5000; use offset={last_shown + 1} to read on]"
    )
    r = await run(ctx, "read_file", path="f.txt", offset=last_shown + 1)
    assert r.content.startswith(f"{last_shown + 1:>6}\t")


async def test_read_file_cuts_long_lines(ctx: ToolContext, ws: Path) -> None:
    (ws / "min.js").write_text("a" * 5000 + "\nshort\n" + "é" * 3000 + "\n")
    lines = (await run(ctx, "read_file", path="min.js")).content.splitlines()
    assert lines[0].startswith("     1\t" + "a" * 2000 + " … [line truncated at 2000 characters]")
    assert len(lines[0]) < 2100
    assert lines[1] == "     2\tshort"
    assert lines[2].startswith("     3\t" + "é" * 2000 + " …")


async def test_read_file_refuses_binary_and_folders_and_missing(ctx: ToolContext, ws: Path) -> None:
    (ws / "img.dat").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    assert "binary" in one_line_error(await run(ctx, "read_file", path="img.dat"))
    # By an image's name, it is read as an image: a damaged one is one line, and no image.
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    broken = await run(ctx, "read_file", path="img.png")
    assert one_line_error(broken) == "img.png: not a readable image" and broken.images == []
    (ws / "late.bin").write_bytes(b"a" * 9000 + b"\x00")  # NUL past the first 8 KiB: text
    assert not (await run(ctx, "read_file", path="late.bin")).is_error
    (ws / "d").mkdir()
    assert "folder" in one_line_error(await run(ctx, "read_file", path="d"))
    assert "no such file" in one_line_error(await run(ctx, "read_file", path="nope.txt"))
    (ws / "empty.txt").write_text("")
    assert "0 lines" in (await run(ctx, "read_file", path="empty.txt")).content


async def test_read_file_refuses_fifo_without_blocking(ctx: ToolContext, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    assert "not a regular file" in one_line_error(await run(ctx, "read_file", path="pipe"))


async def test_every_file_tool_refuses_or_skips_a_fifo_without_blocking(ctx: ToolContext, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    (ws / "a.txt").write_text("needle\n")

    async def bounded(name: str, **inp: Any) -> ToolResult:
        # Nobody ever opens the other end: a tool that opened it blocking would hang here.
        return await asyncio.wait_for(run(ctx, name, **inp), timeout=10)

    assert "pipe" in (await bounded("list_files")).content
    assert (await bounded("grep", pattern="needle")).content == "a.txt:1: needle"
    assert "not a regular file" in one_line_error(await bounded("grep", pattern="x", path="pipe"))
    assert "not a regular file" in one_line_error(await bounded("write_file", path="pipe", content="x"))
    assert "not a regular file" in one_line_error(
        await bounded("edit_file", path="pipe", old_string="a", new_string="b")
    )
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)


async def test_read_file_of_a_huge_file_counts_the_rest_only_so_far(
    ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "MAX_COUNT_BYTES", 1 << 20)  # stands for a log of many GB
    (ws / "big.log").write_bytes(b"".join(b"line %d\n" % i for i in range(1, 400_001)))
    r = await run(ctx, "read_file", path="big.log", limit=2)
    assert r.content.splitlines()[-1].startswith("[showing lines 1–2 of more than ")
    assert r.content.endswith("; use offset=3 to read on]")
    (ws / "small.log").write_bytes(b"a\nb\nc\n")
    assert (await run(ctx, "read_file", path="small.log", limit=2)).content.endswith(
        "of 3; use offset=3 to read on]"
    )


async def test_file_tools_never_open_a_fifo_or_device(
    ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Opening is already an act: it releases a writer blocked on a FIFO, it can act on a device.
    os.mkfifo(ws / "pipe")
    os.symlink(ws / "pipe", ws / "link")
    (ws / "a.txt").write_text("x\n")
    opened: list[str] = []
    real_open = os.open

    def recording_open(path: Any, *args: Any, **kw: Any) -> int:
        opened.append(os.fsdecode(path))
        return real_open(path, *args, **kw)

    monkeypatch.setattr(os, "open", recording_open)
    for name, inp in [
        ("read_file", {"path": "pipe"}),
        ("read_file", {"path": "link"}),
        ("grep", {"pattern": "x", "path": "pipe"}),
        ("grep", {"pattern": "x"}),
        ("edit_file", {"path": "pipe", "old_string": "a", "new_string": "b"}),
        ("write_file", {"path": "pipe", "content": "x"}),
    ]:
        await asyncio.wait_for(run_tool(name, inp, ctx), timeout=10)
    assert opened and not [p for p in opened if p.endswith(("/pipe", "/link"))]


async def test_read_file_over_10_mb_needs_offset_or_limit(ctx: ToolContext, ws: Path) -> None:
    path = ws / "huge.log"
    with open(path, "wb") as f:
        f.write(b"".join(b"entry %d\n" % i for i in range(1, 1001)))
        f.truncate(11 * 1024 * 1024)  # sparse tail: zeros after the first 8 KiB
    msg = one_line_error(await run(ctx, "read_file", path="huge.log"))
    assert "is 11.0 MiB, over the 10.0 MiB limit" in msg and "offset" in msg
    r = await run(ctx, "read_file", path="huge.log", offset=5, limit=2)
    assert r.content.splitlines()[:2] == ["     5\tentry 5", "     6\tentry 6"]
    assert "use offset=7" in r.content


# -- list_files --------------------------------------------------------------------------------


def _tree(ws: Path) -> None:
    for rel in (
        "src/app/main.py",
        "src/app/util.py",
        "src/readme.md",
        "b.txt",
        "A.txt",
        ".env",
        ".git/HEAD",
        ".venv/lib/site.py",
        "node_modules/x/index.js",
        "src/__pycache__/m.pyc",
    ):
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("import os\n")


async def test_list_files_direct_entries_sorted_skipping(ctx: ToolContext, ws: Path) -> None:
    _tree(ws)
    r = await run(ctx, "list_files")
    assert r.content.splitlines() == [".env", "A.txt", "b.txt", "src/"]
    r = await run(ctx, "list_files", path="src")
    assert r.content.splitlines() == ["src/app/", "src/readme.md"]


async def test_list_files_patterns(ctx: ToolContext, ws: Path) -> None:
    _tree(ws)
    assert (await run(ctx, "list_files", pattern="**/*.py")).content.splitlines() == [
        "src/app/main.py",
        "src/app/util.py",
    ]
    assert (await run(ctx, "list_files", path="src", pattern="*/")).content == "src/app/"
    assert (await run(ctx, "list_files", pattern="**/*.{md,txt}")).content.splitlines() == [
        "A.txt",
        "b.txt",
        "src/readme.md",
    ]
    # A pattern naming a skipped folder walks it.
    assert (await run(ctx, "list_files", pattern=".venv/**/*.py")).content == ".venv/lib/site.py"
    assert "node_modules/x/index.js" in (await run(ctx, "list_files", pattern="node_modules/**")).content
    # Listing inside a skipped folder explicitly works too.
    assert (await run(ctx, "list_files", path=".git")).content == ".git/HEAD"
    r = await run(ctx, "list_files", pattern="**/*.rs")
    assert not r.is_error and "nothing matches" in r.content


async def test_list_files_bounded(ctx: ToolContext, ws: Path) -> None:
    d = ws / "many"
    d.mkdir()
    for i in range(1100):
        (d / f"f{i:04}.txt").touch()
    lines = (await run(ctx, "list_files", path="many")).content.splitlines()
    assert len(lines) == 1001
    assert lines[0] == "many/f0000.txt" and lines[999] == "many/f0999.txt"
    assert lines[-1] == "[100 more entries not shown (1100 in all); narrow the path or pattern]"


async def test_list_files_errors(ctx: ToolContext, ws: Path) -> None:
    (ws / "f.txt").write_text("x")
    assert "not a folder" in one_line_error(await run(ctx, "list_files", path="f.txt"))
    assert "no such folder" in one_line_error(await run(ctx, "list_files", path="nope"))
    assert "leaves the workspace" in one_line_error(await run(ctx, "list_files", path=".."))


# -- grep --------------------------------------------------------------------------------------


async def test_grep_format_skips_and_glob(ctx: ToolContext, ws: Path) -> None:
    _tree(ws)
    (ws / "src" / "app" / "main.py").write_text("x = 1\nimport sys\nimport os\n")
    (ws / "blob.bin").write_bytes(b"import os\x00\x01")
    r = await run(ctx, "grep", pattern=r"^import \w+")
    assert r.content.splitlines() == [
        ".env:1: import os",
        "A.txt:1: import os",
        "b.txt:1: import os",
        "src/app/main.py:2: import sys",
        "src/app/main.py:3: import os",
        "src/app/util.py:1: import os",
        "src/readme.md:1: import os",
    ]
    r = await run(ctx, "grep", pattern="import", glob="*.py")
    assert [ln.split(":")[0] for ln in r.content.splitlines()] == [
        "src/app/main.py",
        "src/app/main.py",
        "src/app/util.py",
    ]
    r = await run(ctx, "grep", pattern="(?i)IMPORT SYS", path="src/app/main.py")
    assert r.content == "src/app/main.py:2: import sys"
    r = await run(ctx, "grep", pattern="import", path="src", glob="app/*.py")
    assert len(r.content.splitlines()) == 3
    assert "site.py" in (await run(ctx, "grep", pattern="import", glob=".venv/**")).content
    r = await run(ctx, "grep", pattern="no-such-thing")
    assert not r.is_error and "no matches" in r.content
    assert "binary" in one_line_error(await run(ctx, "grep", pattern="x", path="blob.bin"))


async def test_grep_invalid_regex(ctx: ToolContext) -> None:
    assert "invalid regular expression" in one_line_error(await run(ctx, "grep", pattern="(unclosed"))


async def test_grep_bounded(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text("hit\n" * 700)
    lines = (await run(ctx, "grep", pattern="hit")).content.splitlines()
    assert len(lines) == 501
    assert lines[499] == "a.txt:500: hit"
    assert lines[-1] == "[output truncated: showing 500 of 700 matches; narrow the pattern, path or glob]"


async def test_grep_long_line_shows_the_match(ctx: ToolContext, ws: Path) -> None:
    (ws / "m.js").write_text("a" * 10_000 + "NEEDLE" + "b" * 10_000 + "\n")
    r = await run(ctx, "grep", pattern="NEEDLE")
    assert "NEEDLE" in r.content and len(r.content) < 700


class Heartbeat:
    """Ticks on the event loop; ``max_gap`` is the longest time the loop could not run it."""

    def __init__(self) -> None:
        self.ticks = 0
        self.max_gap = 0.0
        self.task: asyncio.Task[None] | None = None

    async def _beat(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.max_gap = max(self.max_gap, now - last)
            self.ticks += 1
            last = now

    def __enter__(self) -> Heartbeat:
        self.task = asyncio.get_running_loop().create_task(self._beat())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()


# Exponential for stdlib re; the bound has to end it (the old code froze here for good).
CATASTROPHIC = "a" * 5000 + "b"


@pytest.mark.timeout(60)
async def test_grep_catastrophic_regex_times_out_naming_the_pattern_without_freezing_the_loop(
    ws: Path,
) -> None:
    (ws / "ok.txt").write_text("fine\n")
    (ws / "slow.txt").write_text("x\n" + CATASTROPHIC + "\n")
    ctx = ToolContext(workspace=ws, grep_timeout=1.0)
    started = time.monotonic()
    with Heartbeat() as hb:
        r = await run(ctx, "grep", pattern="(a+)+$")
    elapsed = time.monotonic() - started
    msg = one_line_error(r)
    assert "timed out" in msg and "'(a+)+$'" in msg and "slow.txt" in msg
    assert elapsed < 4.0  # the 1 s bound plus scheduling slack on a loaded machine
    assert hb.max_gap < 0.5 and hb.ticks >= 20


@pytest.mark.timeout(60)
async def test_grep_cancelled_mid_search_returns_at_once_and_its_thread_stops_soon(ws: Path) -> None:
    # Each line backtracks for a good fraction of a second: 40 of them would run long after a
    # cancellation unless the search looks at it between lines.
    (ws / "slow.txt").write_text(("a" * 600 + "b\n") * 40)
    ctx = ToolContext(workspace=ws, grep_timeout=120.0)
    task = asyncio.ensure_future(run(ctx, "grep", pattern="(a+)+$"))
    with Heartbeat() as hb:
        done, _ = await asyncio.wait({task}, timeout=0.3)
        assert not done and search.grep_running() == 1
        task.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - started < 0.5
        deadline = time.monotonic() + 5.0
        while search.grep_running() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
    assert search.grep_running() == 0
    assert hb.max_gap < 0.5


async def test_grep_keeps_re_syntax(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.py").write_text("def foo(x):\n    return x  # TODO\nclass Bar: pass\n")
    r = await run(ctx, "grep", pattern=r"(?i)^\s*(def|CLASS)\s+(?P<n>\w+)")
    assert r.content.splitlines() == ["a.py:1: def foo(x):", "a.py:3: class Bar: pass"]
    # Ranges whose bounds are the numbers of repeat opcodes (',' and '+') are plain ranges.
    assert (await run(ctx, "grep", pattern="[+-,]x{2}|[,-.]{3}|Bar")).content == "a.py:3: class Bar: pass"


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def test_undecodable_file_names_reach_no_tool_output_as_surrogates(ctx: ToolContext, ws: Path) -> None:
    bad = os.fsencode(ws) + b"/bad\xffname.txt"
    with open(bad, "wb") as f:
        f.write(b"needle here\n")
    os.mkdir(os.fsencode(ws) + b"/dir\xfe")
    with open(os.fsencode(ws) + b"/dir\xfe/inner.txt", "wb") as f:
        f.write(b"needle too\n")
    results = [
        await run(ctx, "list_files"),
        await run(ctx, "list_files", pattern="**"),
        await run(ctx, "grep", pattern="needle"),
        await run(ctx, "grep", pattern="needle", glob="*.txt"),
    ]
    for r in results:
        assert not r.is_error and _encodable(r.content), r.content
    assert "bad\ufffdname.txt" in results[0].content and "dir\ufffd/" in results[0].content
    assert "dir\ufffd/inner.txt" in results[1].content
    assert "bad\ufffdname.txt:1: needle here" in results[2].content
    assert "dir\ufffd/inner.txt:1: needle too" in results[2].content


async def test_file_names_with_newlines_or_escapes_cannot_add_lines_to_a_listing(
    ctx: ToolContext, ws: Path
) -> None:
    (ws / "evil\n[nothing here]").write_text("needle\n")
    (ws / "b\x1b]0;t\x07.txt").write_text("needle\n")
    listing = (await run(ctx, "list_files")).content.splitlines()
    assert listing == ["b\\x1b]0;t\\x07.txt", "evil\\n[nothing here]"]
    found = (await run(ctx, "grep", pattern="needle")).content.splitlines()
    assert found == ["b\\x1b]0;t\\x07.txt:1: needle", "evil\\n[nothing here]:1: needle"]


@pytest.mark.parametrize(
    ("name", "inp"),
    [
        ("read_file", {"path": "x\udcff.txt"}),
        ("read_file", {"path": "x\ud800.txt"}),
        ("list_files", {"path": "\ud800"}),
        ("grep", {"pattern": "\ud800", "path": "\udcff"}),
        ("write_file", {"path": "a\ud800.txt", "content": "x"}),
        ("edit_file", {"path": "a.txt", "old_string": "\ud800", "new_string": "y"}),
        ("bash", {"command": "echo \ud800"}),
        ("read_memory", {"level": "user\ud800", "filename": "a.md"}),
        ("no_such_tool\ud800", {}),
    ],
)
async def test_tool_inputs_with_lone_surrogates_give_encodable_one_line_errors(
    ctx: ToolContext, ws: Path, name: str, inp: dict[str, Any]
) -> None:
    (ws / "a.txt").write_text("abc\n")
    r = await run_tool(name, inp, ctx)
    assert _encodable(r.content), r.content
    assert r.is_error and "\n" not in r.content


async def test_bash_refuses_a_command_with_a_lone_surrogate_by_name(ctx: ToolContext) -> None:
    msg = one_line_error(await run(ctx, "bash", command="echo \udcff"))
    assert msg == "command is not valid UTF-8 text (it holds a lone surrogate)"


async def test_read_memory_text_with_surrogates_is_repaired(ws: Path) -> None:
    class Odd:
        def read_memory_text(self, level: str, filename: str) -> MemoryText:
            return MemoryText("body \udcff end\n")

    r = await run(ToolContext(workspace=ws, memory=Odd()), "read_memory", level="user", filename="a.md")
    assert r.content == "body \ufffd end\n"


async def test_grep_refuses_patterns_whose_compilation_would_hang_instead_of_freezing(
    ctx: ToolContext, ws: Path
) -> None:
    (ws / "a.txt").write_text("a" * 2000 + "\n")
    started = time.monotonic()
    with Heartbeat() as hb:
        # `regex` compiles nested counts by their product, in C, holding the GIL (10**9 here).
        msg = one_line_error(await run(ctx, "grep", pattern="((a{1000}){1000}){1000}"))
        too_long = one_line_error(await run(ctx, "grep", pattern="x" * 20_000))
        fine = await run(ctx, "grep", pattern="(a{10}){100}")
    assert time.monotonic() - started < 3.0 and hb.max_gap < 0.5
    assert "repeat counts" in msg and "((a{1000}){1000}){1000}" in msg
    assert "20000 characters" in too_long
    assert fine.content.startswith("a.txt:1: aaaa")


async def test_pathological_globs_match_in_linear_time_without_freezing_the_loop(
    ctx: ToolContext, ws: Path
) -> None:
    for i in range(3):
        (ws / ("a" * 60 + str(i))).write_text("x\n")
    deep = ws.joinpath(*["d"] * 20)
    deep.mkdir(parents=True)
    (deep / "y").write_text("needle\n")
    started = time.monotonic()
    with Heartbeat() as hb:
        # Stdlib-regex translations of these backtrack for seconds per name (exponentially).
        r1 = await run(ctx, "list_files", pattern="*a" * 7 + "b")
        r2 = await run(ctx, "list_files", pattern="/".join(["**"] * 12) + "/x")
        r3 = await run(ctx, "grep", pattern="needle", glob="/".join(["**"] * 12) + "/y")
    assert time.monotonic() - started < 3.0
    assert hb.max_gap < 0.5
    assert r1.content.startswith("[nothing matches") and r2.content.startswith("[nothing matches")
    assert r3.content == "d/" * 20 + "y:1: needle"


def _old_glob_regex(pattern: str) -> re.Pattern[str]:
    """The previous translation (one stdlib regex per pattern): the reference semantics."""

    def component(part: str) -> str:
        return "".join("[^/]*" if t == "*" else ("[^/]" if t == "." else t) for t in globs._tokens(part))

    def translate(p: str) -> str:
        parts = [x for x in p.split("/") if x not in ("", ".")]
        out = []
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if part == "**":
                out.append("(?:[^/]+/)*[^/]+" if last else "(?:[^/]+/)*")
            else:
                out.append(component(part) + ("" if last else "/"))
        return "".join(out)

    return re.compile(
        "|".join(f"(?:{translate(a)})" for a in globs.expand_braces(pattern.strip())), re.DOTALL
    )


_GLOB_PIECES = st.sampled_from(["*", "**", "?", "a", "b", ".", "[ab]", "[!a]", "/", "{a,b}", "a*", "*b"])


@given(
    pattern=st.lists(_GLOB_PIECES, min_size=1, max_size=6).map("".join),
    path=st.lists(st.text("ab.", min_size=1, max_size=4), min_size=1, max_size=4).map("/".join),
)
@settings(max_examples=400, deadline=None)
def test_glob_matcher_agrees_with_the_plain_regex_translation(pattern: str, path: str) -> None:
    assert globs.compile_glob(pattern).fullmatch(path) == bool(_old_glob_regex(pattern).fullmatch(path))


# -- write_file / edit_file --------------------------------------------------------------------


async def test_write_file_creates_and_overwrites_atomically(ctx: ToolContext, ws: Path) -> None:
    r = await run(ctx, "write_file", path="a/b/c.txt", content="héllo\n")
    assert not r.is_error and r.content == "created a/b/c.txt (7 bytes)"
    assert (ws / "a/b/c.txt").read_text() == "héllo\n"
    os.chmod(ws / "a/b/c.txt", 0o755)
    r = await run(ctx, "write_file", path=str(ws / "a/b/c.txt"), content="")
    assert r.content == "overwrote a/b/c.txt (0 bytes)"
    assert stat.S_IMODE(os.stat(ws / "a/b/c.txt").st_mode) == 0o755
    assert sorted(p.name for p in (ws / "a/b").iterdir()) == ["c.txt"]  # no temp file left
    (ws / "d").mkdir()
    assert "folder" in one_line_error(await run(ctx, "write_file", path="d", content="x"))
    assert "UTF-8" in one_line_error(await run(ctx, "write_file", path="s.txt", content="\ud800"))


async def test_edit_file_uniqueness_and_replace_all(ctx: ToolContext, ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("a = 1\nb = 1\nc = 2\n")
    msg = one_line_error(await run(ctx, "edit_file", path="m.py", old_string="= 1", new_string="= 3"))
    assert "occurs 2 times" in msg and "context" in msg and "replace_all" in msg
    msg = one_line_error(await run(ctx, "edit_file", path="m.py", old_string="zzz", new_string="y"))
    assert "not found" in msg
    assert "identical" in one_line_error(
        await run(ctx, "edit_file", path="m.py", old_string="c", new_string="c")
    )
    assert "empty" in one_line_error(await run(ctx, "edit_file", path="m.py", old_string="", new_string="c"))
    assert f.read_text() == "a = 1\nb = 1\nc = 2\n"
    r = await run(ctx, "edit_file", path="m.py", old_string="b = 1", new_string="b = 9")
    assert r.content == "edited m.py: 1 replacement"
    r = await run(ctx, "edit_file", path="m.py", old_string=" = ", new_string="=", replace_all=True)
    assert r.content == "edited m.py: 3 replacements"
    assert f.read_text() == "a=1\nb=9\nc=2\n"
    assert "write_file" in one_line_error(
        await run(ctx, "edit_file", path="new.py", old_string="a", new_string="b")
    )


async def test_edit_file_keeps_crlf_and_refuses_binary(ctx: ToolContext, ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    r = await run(ctx, "edit_file", path="w.txt", old_string="one\ntwo", new_string="1\n2")
    assert not r.is_error, r.content
    assert (ws / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"
    (ws / "b.bin").write_bytes(b"ab\x00cd")
    assert "binary" in one_line_error(
        await run(ctx, "edit_file", path="b.bin", old_string="ab", new_string="x")
    )


# -- bash --------------------------------------------------------------------------------------


def _gone(pid: int, timeout: float = 10.0) -> bool:
    """True once ``pid`` is dead; a SIGKILL is delivered asynchronously, so wait with a deadline."""
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        out = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout
        return bool(out.strip()) and not out.strip().startswith("Z")


async def test_bash_exit_code_stdout_stderr(ctx: ToolContext, ws: Path) -> None:
    r = await run(ctx, "bash", command="echo out; echo err >&2; pwd; exit 3")
    assert r.is_error
    assert r.content == f"exit code: 3\n--- stdout ---\nout\n{ws}\n--- stderr ---\nerr"
    r = await run(ctx, "bash", command="cat; echo done")  # stdin is /dev/null: cat ends at once
    assert not r.is_error and r.content == "exit code: 0\n--- stdout ---\ndone"
    r = await run(ctx, "bash", command="true")
    assert r.content == "exit code: 0\n(no output)"


async def test_bash_output_keeps_head_and_tail(ws: Path) -> None:
    ctx = ToolContext(workspace=ws, max_output_chars=1000)
    r = await run(ctx, "bash", command="printf 'HEAD'; head -c 100000 /dev/zero | tr '\\0' x; printf 'TAIL'")
    out = r.content.split("--- stdout ---\n", 1)[1]
    assert out.startswith("HEAD") and out.endswith("TAIL")
    assert "[... 99508 bytes cut ...]" in out
    assert len(r.content) < 1200


async def test_bash_timeout_kills_the_process_group(ws: Path) -> None:
    ctx = ToolContext(workspace=ws, bash_timeout_default=30)
    start = time.monotonic()
    r = await run(ctx, "bash", command="sleep 30 & echo $!; wait", timeout=1)
    assert time.monotonic() - start < 5
    assert r.is_error and r.content.startswith("timed out after 1 s")
    pid = int(r.content.split("--- stdout ---\n")[1].split()[0])
    assert _gone(pid)


async def test_bash_default_timeout_and_cap(ws: Path) -> None:
    ctx = ToolContext(workspace=ws, bash_timeout_default=0.3, bash_timeout_max=0.5)
    r = await run(ctx, "bash", command="sleep 10")
    assert r.is_error and r.content.startswith("timed out after 0.3 s")
    r = await run(ctx, "bash", command="sleep 10", timeout=100)
    assert r.content.startswith("timed out after 0.5 s") and "[timeout capped at 0.5 s]" in r.content


async def test_bash_term_ignoring_child_is_killed(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell, "TERM_GRACE", 0.3)
    ctx = ToolContext(workspace=ws)
    r = await run(ctx, "bash", command="trap '' TERM; sleep 30 & echo $!; wait", timeout=0.5)
    assert r.is_error
    pid = int(r.content.split("--- stdout ---\n")[1].split()[0])
    assert _gone(pid)


async def test_bash_background_child_holding_output_is_stopped(ctx: ToolContext) -> None:
    start = time.monotonic()
    r = await run(ctx, "bash", command="sleep 30 & echo $!")
    assert time.monotonic() - start < 5
    assert not r.is_error and "background processes" in r.content
    assert _gone(int(r.content.split("--- stdout ---\n")[1].split()[0]))


async def test_bash_detached_background_child_keeps_running(ctx: ToolContext) -> None:
    r = await run(ctx, "bash", command="sleep 30 >/dev/null 2>&1 & echo $!")
    pid = int(r.content.split("--- stdout ---\n")[1].split()[0])
    try:
        assert r.content.startswith("exit code: 0") and "background" not in r.content
        assert _alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


async def test_bash_cancellation_kills_the_process_group(ctx: ToolContext, ws: Path) -> None:
    fifo = ws / "ready"
    os.mkfifo(fifo)
    task = asyncio.create_task(run(ctx, "bash", command="sleep 30 & echo $! > ready; wait"))
    # Blocks (in a thread) until the command has started its child and written the pid.
    pid = int(await asyncio.to_thread(fifo.read_text))
    assert _alive(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _gone(pid)


# -- read_memory -------------------------------------------------------------------------------


class FakeMemory:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def read_memory_text(self, level: str, filename: str) -> MemoryText:
        self.calls.append((level, filename))
        if filename == "gone.md":
            raise StoreError(f"no note named {filename!r} in the {level} store")
        if filename == "bad":
            raise ValueError("filename 'bad' does not end in .md")
        return MemoryText("- [project_knowledge] A (a.md)\n" if filename == "MEMORY.md" else "the body\n")


async def test_read_memory_delegates_and_reports_errors(ws: Path) -> None:
    mem = FakeMemory()
    ctx = ToolContext(workspace=ws, memory=mem)
    assert (await run(ctx, "read_memory", level="user", filename="a.md")).content == "the body\n"
    assert "(a.md)" in (await run(ctx, "read_memory", level="project", filename="MEMORY.md")).content
    assert "no note named" in one_line_error(await run(ctx, "read_memory", level="user", filename="gone.md"))
    assert ".md" in one_line_error(await run(ctx, "read_memory", level="user", filename="bad"))
    assert "'project' or 'user'" in one_line_error(
        await run(ctx, "read_memory", level="team", filename="a.md")
    )
    assert mem.calls == [("user", "a.md"), ("project", "MEMORY.md"), ("user", "gone.md"), ("user", "bad")]
    ctx = ToolContext(workspace=ws, memory=None)
    assert (
        one_line_error(await run(ctx, "read_memory", level="user", filename="a.md"))
        == "memory is not available"
    )


async def test_read_memory_with_the_real_stores(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_note(
        stores, Level.PROJECT, "project_knowledge_build.md", "Build", "Run make test.\n", summary="How"
    )
    ctx = ToolContext(workspace=Path(stores.paths.workspace), memory=stores)
    r = await run(ctx, "read_memory", level="project", filename="project_knowledge_build.md")
    assert r.content == "Run make test.\n"
    for bad in ("../x.md", "nope.md", ".hidden.md"):
        one_line_error(await run(ctx, "read_memory", level="project", filename=bad))
    r = await run(ctx, "read_memory", level="user", filename="MEMORY.md")
    assert not r.is_error and "no notes" in r.content


class BigIndexMemory:
    """A level whose MEMORY.md has ``n`` lines (what ~5,000 notes give)."""

    def __init__(self, n: int) -> None:
        self.lines = [
            f"- [project_knowledge] Note {i} — summary {i} (project_knowledge_note-{i}.md)"
            for i in range(1, n + 1)
        ]

    def read_memory_text(self, level: str, filename: str) -> MemoryText:
        return MemoryText("".join(line + "\n" for line in self.lines))


def _next_offset(content: str) -> int | None:
    m = re.search(r"use offset=(\d+) to read on\]$", content)
    return int(m.group(1)) if m else None


async def test_read_memory_5000_line_index_is_read_to_the_end_by_following_next_offsets(ws: Path) -> None:
    mem = BigIndexMemory(5000)
    ctx = ToolContext(workspace=ws, memory=mem)
    got: list[str] = []
    offset: int | None = None
    for _ in range(200):
        inp: dict[str, Any] = {"level": "project", "filename": "MEMORY.md"}
        if offset is not None:
            inp["offset"] = offset
        r = await run(ctx, "read_memory", **inp)
        assert not r.is_error, r.content
        assert len(r.content) <= ctx.max_output_chars
        offset = _next_offset(r.content)
        body = r.content.rsplit("\n", 1)[0] if offset is not None else r.content
        got.extend(body.splitlines())
        if offset is None:
            break
        assert offset == len(got) + 1  # the named offset is exactly the first line not shown yet
    assert got == mem.lines


async def test_read_memory_offset_and_limit_mean_what_they_mean_for_read_file(ws: Path) -> None:
    ctx = ToolContext(workspace=ws, memory=BigIndexMemory(10))
    r = await run(ctx, "read_memory", level="user", filename="MEMORY.md", offset=3, limit=2)
    assert r.content.splitlines() == [
        "- [project_knowledge] Note 3 — summary 3 (project_knowledge_note-3.md)",
        "- [project_knowledge] Note 4 — summary 4 (project_knowledge_note-4.md)",
        "[showing lines 3–4 of 10; use offset=5 to read on]",
    ]
    r = await run(ctx, "read_memory", level="user", filename="MEMORY.md", offset=9)
    assert r.content.splitlines()[-1].endswith("(project_knowledge_note-10.md)")  # to the end: no note
    assert "offset 11 is past the end" in one_line_error(
        await run(ctx, "read_memory", level="user", filename="MEMORY.md", offset=11)
    )
    for bad in ({"offset": "x"}, {"limit": 0}, {"offset": -1}):
        one_line_error(await run(ctx, "read_memory", level="user", filename="MEMORY.md", **bad))


async def test_read_memory_pages_a_long_note_of_the_real_store(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    body = "".join(f"line {i} " + "x" * 90 + "\n" for i in range(1, 1001))
    write_note(stores, Level.PROJECT, "project_knowledge_long.md", "Long", body)
    ctx = ToolContext(workspace=Path(stores.paths.workspace), memory=stores, max_output_chars=5000)
    r = await run(ctx, "read_memory", level="project", filename="project_knowledge_long.md")
    assert len(r.content) <= 5000 and r.content.startswith("line 1 ")
    offset = _next_offset(r.content)
    assert offset is not None
    r = await run(ctx, "read_memory", level="project", filename="project_knowledge_long.md", offset=990)
    assert r.content.splitlines()[0].startswith("line 990 ") and r.content.splitlines()[-1].startswith(
        "line 1000 "
    )


# -- gates -------------------------------------------------------------------------------------


async def test_a_mode_allow_list_lets_the_tools_it_names_run_and_refuses_the_rest_without_a_window(
    ctx: ToolContext, ws: Path
) -> None:
    gate = Gate(PermissionRules(workspace=ws), allowances=RunAllowances(allowed={"bash"}))

    async def decide(name: str, **inp: object) -> PermissionDecision:
        tool = BUILTIN_TOOLS.get(name)
        assert tool is not None
        return await gate.decide(tool, tool.parse(inp), ctx=ctx)

    assert await decide("bash", command="ls") == PermissionDecision(True)
    for name, inp in (
        ("read_file", {"path": "a"}),
        ("list_files", {}),
        ("grep", {"pattern": "x"}),
        ("read_memory", {"level": "user", "filename": "a.md"}),
        ("task", {"description": "d", "prompt": "p"}),
    ):
        assert (await decide(name, **inp)).allowed, name
    d = await decide("write_file", path="x", content="")
    assert not d.allowed
    assert d.reason == (
        "write_file was denied: print mode runs it only when a rule or --allow-tools allows it "
        "(no rule matches this write_file call); the rule write_file(/x) would allow it"
    )
    empty = Gate(PermissionRules(workspace=ws))
    edit = BUILTIN_TOOLS.get("edit_file")
    assert edit is not None
    args = edit.parse({"path": "a", "old_string": "x", "new_string": "y"})
    assert not (await empty.decide(edit, args, ctx=ctx)).allowed

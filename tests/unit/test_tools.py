"""The agent tools (DESIGN.md §9): contract, confinement, bounds, bash process handling, gates."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from app.tools import (
    READ_ONLY_TOOLS,
    TOOL_SPECS,
    AllowListGate,
    PermissionDecision,
    PermissionGate,
    ToolContext,
    ToolResult,
    api_tools,
    needs_permission,
    parse_allow_tools,
    run_tool,
    shell,
)
from memory.model import Level
from memory.store import StoreError
from tests.memtools import make_env, write_note

ORDER = ["read_file", "list_files", "grep", "write_file", "edit_file", "bash", "read_memory", "task"]

# name -> (required, optional) property names, exactly as DESIGN.md §9 gives them.
CONTRACT = {
    "read_file": ({"path"}, {"offset", "limit"}),
    "list_files": (set(), {"path", "pattern"}),
    "grep": ({"pattern"}, {"path", "glob"}),
    "write_file": ({"path", "content"}, set()),
    "edit_file": ({"path", "old_string", "new_string"}, {"replace_all"}),
    "bash": ({"command"}, {"timeout"}),
    "read_memory": ({"level", "filename"}, set()),
    "task": ({"description", "prompt"}, set()),
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


def test_api_tools_names_exactly_the_eight_in_order() -> None:
    tools = api_tools()
    assert [t["name"] for t in tools] == ORDER
    assert list(TOOL_SPECS) == ORDER
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
    sub = api_tools(READ_ONLY_TOOLS)
    assert [t["name"] for t in sub] == ["read_file", "list_files", "grep", "read_memory"]
    sub[0]["input_schema"]["properties"].clear()
    assert api_tools(["read_file"])[0]["input_schema"]["properties"]
    with pytest.raises(ValueError):
        api_tools(["nope"])


def test_kinds_read_only_and_permission() -> None:
    assert READ_ONLY_TOOLS == {"read_file", "list_files", "grep", "read_memory"}
    assert {n for n in ORDER if needs_permission(n)} == {"write_file", "edit_file", "bash"}
    assert not needs_permission("task") and not needs_permission("unknown")
    assert {n: s.kind for n, s in TOOL_SPECS.items()} == {
        "read_file": "read", "list_files": "read", "grep": "read", "write_file": "write",
        "edit_file": "write", "bash": "execute", "read_memory": "read", "task": "agent",
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
        ("edit_file", {"path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"}, "true or false"),
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


@pytest.mark.parametrize("path", ["../outside/secret.txt", "sub/../../outside/secret.txt", "..", "/etc/passwd"])
async def test_read_escapes_refused(ctx: ToolContext, outside: Path, path: str) -> None:
    (Path(ctx.workspace) / "sub").mkdir()
    msg = one_line_error(await run(ctx, "read_file", path=path))
    assert "outside" in msg or "leaves the workspace" in msg


async def test_absolute_paths_outside_refused_inside_allowed(ctx: ToolContext, ws: Path, outside: Path) -> None:
    assert "outside the workspace" in one_line_error(await run(ctx, "read_file", path=str(outside / "secret.txt")))
    (ws / "in.txt").write_text("hello\n")
    assert (await run(ctx, "read_file", path=str(ws / "in.txt"))).content == "     1\thello"
    assert "outside" in one_line_error(await run(ctx, "write_file", path=str(outside / "new.txt"), content="x"))
    assert not (outside / "new.txt").exists()


async def test_symlinks_out_of_the_workspace_are_never_followed(ctx: ToolContext, ws: Path, outside: Path) -> None:
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
    assert (await run(ctx, "list_files", pattern="**")).content.splitlines() == ["dangling", "link.txt", "linkdir"]
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
    assert ".git" in one_line_error(await run(ctx, "edit_file", path=".git/config", old_string="core", new_string="x"))
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / "sub").exists()
    assert not (await run(ctx, "read_file", path=".git/config")).is_error


async def test_memory_store_write_refused(ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ws / ".PseudoClaude" / "memory"
    store.mkdir(parents=True)
    (store / "project_knowledge_a.md").write_text("---\ntitle: a\n---\nbody\n")
    for path in (".PseudoClaude/memory/x.md", ".PseudoClaude/memory/project_knowledge_a.md", ".PseudoClaude/memory"):
        msg = one_line_error(await run(ctx, "write_file", path=path, content="x"))
        assert "memory" in msg and "read_memory" in msg
    r = await run(ctx, "edit_file", path=".PseudoClaude/memory/project_knowledge_a.md", old_string="body", new_string="x")
    assert "memory store" in one_line_error(r)
    assert (store / "project_knowledge_a.md").read_text().endswith("body\n")
    # The user store too, should $PSEUDOCLAUDE_HOME lie inside the workspace.
    monkeypatch.setenv("PSEUDOCLAUDE_HOME", str(ws / "home"))
    assert "user memory store" in one_line_error(await run(ctx, "write_file", path="home/memory/n.md", content="x"))
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
        "     4\tline 4", "     5\tline 5", "     6\tline 6",
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
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    assert "binary" in one_line_error(await run(ctx, "read_file", path="img.png"))
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


async def test_read_file_over_10_mb_needs_offset_or_limit(ctx: ToolContext, ws: Path) -> None:
    path = ws / "huge.log"
    with open(path, "wb") as f:
        f.write(b"".join(b"entry %d\n" % i for i in range(1, 1001)))
        f.truncate(11 * 1024 * 1024)  # sparse tail: zeros after the first 8 KiB
    msg = one_line_error(await run(ctx, "read_file", path="huge.log"))
    assert "10 MB" in msg and "offset" in msg
    r = await run(ctx, "read_file", path="huge.log", offset=5, limit=2)
    assert r.content.splitlines()[:2] == ["     5\tentry 5", "     6\tentry 6"]
    assert "use offset=7" in r.content


# -- list_files --------------------------------------------------------------------------------


def _tree(ws: Path) -> None:
    for rel in ("src/app/main.py", "src/app/util.py", "src/readme.md", "b.txt", "A.txt", ".env",
                ".git/HEAD", ".venv/lib/site.py", "node_modules/x/index.js", "src/__pycache__/m.pyc"):
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
        "src/app/main.py", "src/app/util.py",
    ]
    assert (await run(ctx, "list_files", path="src", pattern="*/")).content == "src/app/"
    assert (await run(ctx, "list_files", pattern="**/*.{md,txt}")).content.splitlines() == [
        "A.txt", "b.txt", "src/readme.md",
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
        ".env:1: import os", "A.txt:1: import os", "b.txt:1: import os",
        "src/app/main.py:2: import sys", "src/app/main.py:3: import os",
        "src/app/util.py:1: import os", "src/readme.md:1: import os",
    ]
    r = await run(ctx, "grep", pattern="import", glob="*.py")
    assert [ln.split(":")[0] for ln in r.content.splitlines()] == [
        "src/app/main.py", "src/app/main.py", "src/app/util.py",
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
    assert "identical" in one_line_error(await run(ctx, "edit_file", path="m.py", old_string="c", new_string="c"))
    assert "empty" in one_line_error(await run(ctx, "edit_file", path="m.py", old_string="", new_string="c"))
    assert f.read_text() == "a = 1\nb = 1\nc = 2\n"
    r = await run(ctx, "edit_file", path="m.py", old_string="b = 1", new_string="b = 9")
    assert r.content == "edited m.py: 1 replacement"
    r = await run(ctx, "edit_file", path="m.py", old_string=" = ", new_string="=", replace_all=True)
    assert r.content == "edited m.py: 3 replacements"
    assert f.read_text() == "a=1\nb=9\nc=2\n"
    assert "write_file" in one_line_error(await run(ctx, "edit_file", path="new.py", old_string="a", new_string="b"))


async def test_edit_file_keeps_crlf_and_refuses_binary(ctx: ToolContext, ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    r = await run(ctx, "edit_file", path="w.txt", old_string="one\ntwo", new_string="1\n2")
    assert not r.is_error, r.content
    assert (ws / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"
    (ws / "b.bin").write_bytes(b"ab\x00cd")
    assert "binary" in one_line_error(await run(ctx, "edit_file", path="b.bin", old_string="ab", new_string="x"))


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

    def read_memory(self, level: str, filename: str) -> str:
        self.calls.append((level, filename))
        if filename == "gone.md":
            raise StoreError(f"no note named {filename!r} in the {level} store")
        if filename == "bad":
            raise ValueError("filename 'bad' does not end in .md")
        return "- [project_knowledge] A (a.md)\n" if filename == "MEMORY.md" else "the body\n"


async def test_read_memory_delegates_and_reports_errors(ws: Path) -> None:
    mem = FakeMemory()
    ctx = ToolContext(workspace=ws, memory=mem)
    assert (await run(ctx, "read_memory", level="user", filename="a.md")).content == "the body\n"
    assert "(a.md)" in (await run(ctx, "read_memory", level="project", filename="MEMORY.md")).content
    assert "no note named" in one_line_error(await run(ctx, "read_memory", level="user", filename="gone.md"))
    assert ".md" in one_line_error(await run(ctx, "read_memory", level="user", filename="bad"))
    assert "'project' or 'user'" in one_line_error(await run(ctx, "read_memory", level="team", filename="a.md"))
    assert mem.calls == [("user", "a.md"), ("project", "MEMORY.md"), ("user", "gone.md"), ("user", "bad")]
    ctx = ToolContext(workspace=ws, memory=None)
    assert one_line_error(await run(ctx, "read_memory", level="user", filename="a.md")) == "memory is not available"


async def test_read_memory_with_the_real_stores(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_note(stores, Level.PROJECT, "project_knowledge_build.md", "Build", "Run make test.\n", summary="How")
    ctx = ToolContext(workspace=Path(stores.paths.workspace), memory=stores)
    r = await run(ctx, "read_memory", level="project", filename="project_knowledge_build.md")
    assert r.content == "Run make test.\n"
    for bad in ("../x.md", "nope.md", ".hidden.md"):
        one_line_error(await run(ctx, "read_memory", level="project", filename=bad))
    r = await run(ctx, "read_memory", level="user", filename="MEMORY.md")
    assert not r.is_error and "no notes" in r.content


# -- gates -------------------------------------------------------------------------------------


async def test_allow_list_gate() -> None:
    gate = AllowListGate(["bash"])
    assert isinstance(gate, PermissionGate)
    assert await gate.decide("bash", {"command": "ls"}) == PermissionDecision(True)
    for name in ("read_file", "list_files", "grep", "read_memory", "task"):
        assert (await gate.decide(name, {})).allowed
    d = await gate.decide("write_file", {"path": "x", "content": ""})
    assert not d.allowed
    assert d.reason == (
        "write_file was denied: print mode allows only the tools named in --allow-tools (write_file is not)"
    )
    assert not (await AllowListGate([]).decide("edit_file", {})).allowed


def test_parse_allow_tools() -> None:
    assert parse_allow_tools("bash,write_file") == {"bash", "write_file"}
    assert parse_allow_tools(" bash , edit_file ,") == {"bash", "edit_file"}
    assert parse_allow_tools("") == frozenset()
    with pytest.raises(ValueError) as e:
        parse_allow_tools("bash,shell")
    msg = str(e.value)
    assert "\n" not in msg and "shell" in msg and all(n in msg for n in ORDER)

"""`pseudoclaude memory ...` and bad input: a one-line reason, nothing lost."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.main import main
from memory.constants import INDEX_FILE
from memory.store.paths import pseudoclaude_home
from memory.store.stores import MemoryStores

# `ws` here is an empty folder, not the shared git work tree.
pytestmark = pytest.mark.plain_ws

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "repo"
    (w / ".git").mkdir(parents=True)
    (w / "src").mkdir()
    return w


def run(
    ws: Path, *args: str, stdin: str | None = None, monkeypatch=None, capsys=None
) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(
            sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8", "surrogatepass")))
        )
    code = main(["memory", *args, "-C", str(ws)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cli(ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    return lambda *args, stdin=None: run(ws, *args, stdin=stdin, monkeypatch=monkeypatch, capsys=capsys)


def stores_for(ws: Path) -> MemoryStores:
    return MemoryStores(os.path.realpath(ws))


def create_op(title: str, level: str = "project", type_: str = "project_knowledge", **kw) -> dict:
    return {
        "action": "create",
        "level": level,
        "type": type_,
        "title": title,
        "content": f"{title} body",
        **kw,
    }


def test_apply_then_index_list_show(cli, ws: Path) -> None:
    ops = [create_op("Build", summary="Use make."), create_op("Chinese", "user", "user_preference")]
    code, out, err = cli("apply", "-", stdin=json.dumps(ops))
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "create project/project_knowledge_build.md",
        "create user/user_preference_chinese.md",
    ]
    code, out, _ = cli("index")
    assert out == (
        "## Project Memory\n- [project_knowledge] Build — Use make. (project_knowledge_build.md)\n\n"
        "## User Memory\n- [user_preference] Chinese (user_preference_chinese.md)\n"
    )
    code, out, _ = cli("list")
    assert "project_knowledge_build.md  [project_knowledge] Build — Use make." in out
    code, out, _ = cli("show", "user", "user_preference_chinese.md")
    assert (
        code == 0 and out.startswith("---\n") and "source: manual" in out and out.endswith("Chinese body\n")
    )
    code, out, _ = cli("show", "project", INDEX_FILE)
    assert out == "- [project_knowledge] Build — Use make. (project_knowledge_build.md)\n"


def test_workspace_flag_before_memory(ws: Path, capsys) -> None:
    assert main(["-C", str(ws), "memory", "index"]) == 0
    assert main(["-C", str(ws / "src"), "memory", "apply", os.devnull]) == 3  # empty file: nothing to parse
    capsys.readouterr()


def test_workspace_is_git_top_level(ws: Path, monkeypatch, capsys) -> None:
    run(
        ws / "src", "apply", "-", stdin=json.dumps([create_op("Top")]), monkeypatch=monkeypatch, capsys=capsys
    )
    assert (ws / ".PseudoClaude" / "memory" / "project_knowledge_top.md").exists()
    assert not (ws / "src" / ".PseudoClaude").exists()


def test_show_refuses_hostile_name(cli) -> None:
    code, _, err = cli("show", "project", "../../etc/passwd")
    assert code == 1 and err.count("\n") == 1


def test_apply_malformed_json_exit_3_one_line(cli, ws: Path) -> None:
    code, out, err = cli("apply", "-", stdin='here you go: [{"action": "create", oops}]')
    assert code == 3 and out == "" and err.count("\n") == 1 and "no operations found" in err
    assert not (ws / ".PseudoClaude").exists()


def test_apply_empty_array_is_success(cli) -> None:
    assert cli("apply", "-", stdin="[]")[0] == 0


def test_bad_ops_rejected_with_reasons_good_ones_apply(cli, ws: Path) -> None:
    ops = [
        create_op("Good one"),
        {"action": "explode", "level": "project"},
        {**create_op("Bad level"), "level": "team"},
        {**create_op("Bad type"), "type": "gossip"},
        {"action": "create", "level": "project", "type": "project_knowledge", "content": "no title"},
        {**create_op("Too big"), "content": "x" * (16 * 1024 + 1)},
        {"action": "update", "level": "project", "filename": "../escape.md", "content": "x"},
        {"action": "delete", "level": "user", "filename": "MEMORY.md"},
        {"action": "update", "level": "project", "filename": "project_knowledge_nope.md", "content": "x"},
        {**create_op("Surrogate"), "content": "bad \ud800 char"},
        "not an object",
        create_op("Good two", "user", "reference_material"),
    ]
    text = "Sure! Here are the ops:\n```json\n" + json.dumps(ops) + "\n```\nLet me know [if] that's {ok}."
    code, out, err = cli("apply", "-", stdin=text)
    assert code == 3
    assert out.splitlines() == [
        "create project/project_knowledge_good-one.md",
        "create user/reference_material_good-two.md",
    ]
    reasons = err.splitlines()
    assert len(reasons) == 10 and all(r.startswith("pseudoclaude: op ") for r in reasons)
    for i, r in zip([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], reasons, strict=True):
        assert r.startswith(f"pseudoclaude: op {i}:"), r
    assert "surrogate" in reasons[8]


def test_more_than_50_ops_rejected_past_the_50th(cli, ws: Path) -> None:
    ops = [create_op(f"N{i}") for i in range(53)]
    code, out, err = cli("apply", "-", stdin=json.dumps(ops))
    assert code == 3 and len(out.splitlines()) == 50
    assert len(err.splitlines()) == 3 and all("50" in line for line in err.splitlines())


def test_hand_broken_note_and_index_are_reported_and_fixed(cli, ws: Path) -> None:
    cli("apply", "-", stdin=json.dumps([create_op("A"), create_op("B")]))
    store = ws / ".PseudoClaude" / "memory"
    (store / "project_knowledge_a.md").write_text("---\ntitle: [unclosed\n---\nbody kept\n")
    (store / INDEX_FILE).write_text("# injected header\nrandom text\n")
    code, out, _ = cli("doctor")
    assert code == 1
    assert "project_knowledge_a.md: front matter is not valid YAML" in out
    # MEMORY.md is derived: rebuilt before doctor reads, said as fixed, not a problem.
    assert "fixed: project store: rebuilt MEMORY.md from the cards" in out
    assert "does not match" not in out
    code, out, _ = cli("doctor", "--fix")
    # The broken note is never removed: it stays listed (by filename) and reported.
    assert (store / "project_knowledge_a.md").read_text().endswith("body kept\n")
    assert code == 1 and "front matter is not valid YAML" in out
    index = (store / INDEX_FILE).read_text()
    assert "(project_knowledge_a.md)" in index and "injected" not in index
    code, out, _ = cli("list")
    assert "! front matter is not valid YAML" in out


def test_doctor_healthy_and_interrupted_transaction(cli, ws: Path) -> None:
    assert cli("doctor")[0] == 0
    cli("apply", "-", stdin=json.dumps([create_op("A")]))
    store = ws / ".PseudoClaude" / "memory"
    (store / ".pc-stage-0000-1").write_text("half a batch")
    code, out, _ = cli("doctor")
    assert code == 1 and "leftover temporary file" in out
    code, out, _ = cli("doctor", "--fix")
    assert code == 0 and not (store / ".pc-stage-0000-1").exists()


def test_store_folder_symlink_is_refused(cli, ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (ws / ".PseudoClaude").mkdir()
    (ws / ".PseudoClaude" / "memory").symlink_to(target)
    code, out, err = cli(
        "apply", "-", stdin=json.dumps([create_op("A"), create_op("U", "user", "user_preference")])
    )
    assert code == 3 and "symlink" in err and out == "create user/user_preference_u.md\n"
    assert list(target.iterdir()) == []
    code, out, _ = cli("doctor")
    assert code == 1 and "symlink" in out


def _all_files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def test_hostile_batch_writes_nothing_outside_the_stores(cli, ws: Path, tmp_path: Path) -> None:
    (ws / "src" / "main.py").write_text("print('hi')\n")
    (tmp_path / "victim.md").write_text("victim")
    (ws / ".PseudoClaude" / "memory").mkdir(parents=True)
    (ws / ".PseudoClaude" / "memory" / "project_knowledge_evil.md").symlink_to(tmp_path / "victim.md")
    before = _all_files(tmp_path)
    hostile = [
        "../../victim.md",
        "/tmp/x.md",
        "..\\x.md",
        "project_knowledge_evil.md",
        "\u202eevil.md",
        ".gitignore",
        "x\x00.md",
        "MEMORY.md",
        "../memory/x.md",
        "a/../../b.md",
    ]
    ops = [
        {"action": a, "level": lv, "filename": f, "content": "pwned"}
        for f in hostile
        for a in ("update", "delete")
        for lv in ("project", "user")
    ]
    ops.append({**create_op("Legit", slug="../../../escape"), "summary": "x"})
    code, out, err = cli("apply", "-", stdin=json.dumps(ops))
    assert code == 3 and len(err.splitlines()) == 40 and out == "create project/project_knowledge_escape.md\n"
    after = _all_files(tmp_path)
    store_dirs = (str(ws / ".PseudoClaude" / "memory"), str(pseudoclaude_home()))
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert changed and all(p.startswith(store_dirs) for p in changed), sorted(changed)
    assert (tmp_path / "victim.md").read_text() == "victim"


def test_slug_cannot_escape(cli, ws: Path) -> None:
    code, out, _ = cli("apply", "-", stdin=json.dumps([create_op("Legit", slug="../../../escape")]))
    assert code == 0 and out == "create project/project_knowledge_escape.md\n"


def test_undo_cli(cli, ws: Path) -> None:
    code, _, err = cli("undo")
    assert code == 1 and "nothing to undo" in err and err.count("\n") == 1
    cli("apply", "-", stdin=json.dumps([create_op("A")]))
    code, out, _ = cli("undo")
    assert code == 0 and "reverted project/project_knowledge_a.md" in out
    assert not (ws / ".PseudoClaude" / "memory" / "project_knowledge_a.md").exists()


def test_usage_error_exit_2(ws: Path, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["memory", "frobnicate"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["memory", "show", "team", "x.md"])
    assert e.value.code == 2
    assert main(["memory", "index", "-C", str(ws / "missing")]) == 2
    capsys.readouterr()


def test_console_script_runs_as_a_subprocess(ws: Path) -> None:
    exe = Path(sys.executable).with_name("pseudoclaude")
    ops = json.dumps([create_op("Sub")])
    out = subprocess.run(
        [str(exe), "-C", str(ws), "memory", "apply", "-"],
        input=ops,
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )
    assert out.returncode == 0, out.stderr
    out = subprocess.run(
        [str(exe), "memory", "index", "-C", str(ws)], capture_output=True, text=True, timeout=60
    )
    assert "(project_knowledge_sub.md)" in out.stdout


def _spool_job(
    ws: Path,
    *,
    state: str = "held",
    held: list[dict] | None = None,
    text: str = "please remember",
    workspace: str | None = None,
):
    from memory.jobs.spool import HeldOp, Spool, make_job
    from memory.model import Turn, TurnMessage
    from memory.store.ops import validate_operations

    stores = stores_for(ws)
    job = make_job(
        workspace or stores.paths.workspace,
        [Turn(messages=[TurnMessage(role="user", text=text)])],
        mode="review",
    )
    job.state = state
    if held:
        ops, _ = validate_operations(held)
        job.held_ops = [HeldOp(index=i, op=o) for i, o in ops]
        job.snapshot_hashes = stores.snapshot().hashes
    if state == "failed":
        job.error = "the API is overloaded (529)"
    Spool(stores.paths).submit(job)
    return job


def test_pending_lists_held_failed_and_orphans(cli, ws: Path, tmp_path: Path) -> None:
    assert cli("pending")[1] == "no pending memory jobs\n"
    held = _spool_job(ws, held=[create_op("H")], text="held turn")
    failed = _spool_job(ws, state="failed", text="failed turn")
    gone = tmp_path / "deleted-workspace"
    orphan = _spool_job(ws, state="queued", text="orphan turn", workspace=str(gone))
    code, out, _ = cli("pending")
    assert code == 0
    assert f"{held.id}  held" in out and "held turn" in out and "1 held op(s)" in out
    assert f"{failed.id}  failed" in out and "(the API is overloaded (529))" in out
    assert orphan.id not in out
    code, out, _ = cli("pending", "--all")
    assert f"{orphan.id}  orphaned" in out and str(gone) in out


def test_approve_subset_then_reject_rest(cli, ws: Path) -> None:
    job = _spool_job(ws, held=[create_op("First"), create_op("Second"), create_op("Third")])
    code, out, err = cli("approve", job.id, "0", "2")
    assert code == 0, err
    assert (
        "create project/project_knowledge_first.md" in out
        and "create project/project_knowledge_third.md" in out
    )
    assert "still held: ops 1" in out
    store = ws / ".PseudoClaude" / "memory"
    assert sorted(p.name for p in store.glob("project_knowledge_*.md")) == [
        "project_knowledge_first.md",
        "project_knowledge_third.md",
    ]
    code, out, _ = cli("pending")
    [line] = out.splitlines()
    rest_id = line.split()[0]
    code, out, _ = cli("reject", rest_id)
    assert code == 0 and "rejected all held ops" in out
    assert cli("pending")[1] == "no pending memory jobs\n"
    assert not (store / "project_knowledge_second.md").exists()


def test_approve_reports_conflict_with_hand_edit(cli, ws: Path) -> None:
    cli("apply", "-", stdin=json.dumps([create_op("Note")]))
    job = _spool_job(
        ws,
        held=[
            {
                "action": "update",
                "level": "project",
                "filename": "project_knowledge_note.md",
                "content": "model version",
            }
        ],
    )
    p = ws / ".PseudoClaude" / "memory" / "project_knowledge_note.md"
    p.write_text(p.read_text() + "hand edit\n")
    edited = p.read_bytes()
    code, _, err = cli("approve", job.id)
    assert code == 3 and "changed since" in err
    assert p.read_bytes() == edited


def test_approve_unknown_job_is_one_line(cli) -> None:
    code, _, err = cli("approve", "nope")
    assert code == 1 and err.count("\n") == 1 and "nope" in err


def test_doctor_reports_corrupt_spool_file_and_missing_gitignore(cli, ws: Path) -> None:
    cli("apply", "-", stdin=json.dumps([create_op("A")]))
    (ws / ".PseudoClaude" / "memory" / ".gitignore").unlink()
    spool_dir = pseudoclaude_home() / "spool"
    spool_dir.mkdir(parents=True, exist_ok=True)
    bad = spool_dir / "00000000000000000001-deadbeef.json"
    bad.write_text("{not json")
    code, out, _ = cli("doctor")
    # A missing .gitignore is put back before any command reads the store, and said.
    assert code == 1 and "fixed: project store: rebuilt MEMORY.md" in out and "spool:" in out
    assert (ws / ".PseudoClaude" / "memory" / ".gitignore").exists()
    code, out, _ = cli("doctor", "--fix")
    # The damaged job file is moved aside, bytes kept, and no longer a problem.
    moved = spool_dir / "damaged" / bad.name
    assert not bad.exists() and moved.read_text() == "{not json" and code == 0 and "spool:" in out

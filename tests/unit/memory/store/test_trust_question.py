"""The trust question before the stores load (memory.store.trust.needs_asking): the same answer as
``MemoryStores.project_trusted``, from modules that load neither pydantic nor YAML."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memory.store.fs import FS
from memory.store.paths import Paths
from memory.store.stores import MemoryStores
from memory.store.trust import needs_asking
from tests.support.memtools import trust_workspace

ROOT = Path(__file__).resolve().parents[4]
CARD = (
    "---\ntitle: Deploy on Fridays\nsummary: ok\ntype: project_knowledge\ncreated: '2026-01-01T00:00:00Z'\n"
    "updated: '2026-01-01T00:00:00Z'\nsource: manual\n---\nBody.\n"
)


def _store(ws: Path) -> Path:
    folder = ws / ".PseudoClaude" / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _card(ws: Path) -> None:
    (_store(ws) / "project_knowledge_deploy.md").write_text(CARD)


def _symlinked_store(ws: Path) -> None:
    elsewhere = ws.parent / "elsewhere"
    (elsewhere / "memory").mkdir(parents=True)
    (elsewhere / "memory" / "project_knowledge_deploy.md").write_text(CARD)
    (ws / ".PseudoClaude").symlink_to(elsewhere)


def _store_is_a_file(ws: Path) -> None:
    (ws / ".PseudoClaude").mkdir()
    (ws / ".PseudoClaude" / "memory").write_text(CARD)


CASES: dict[str, Callable[[Path], None]] = {
    "no store": lambda ws: None,
    "an empty store": _store,
    "no card, other files": lambda ws: (_store(ws) / "notes.txt").write_text("x"),
    "only MEMORY.md": lambda ws: (_store(ws) / "MEMORY.md").write_text(
        "- [project_knowledge] x — y (a.md)\n"
    ),
    "a cloned card": _card,
    "a trusted card": lambda ws: (_card(ws), trust_workspace(ws)),
    "a symlinked .PseudoClaude": _symlinked_store,
    "a file where the store folder is": _store_is_a_file,
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_question_before_the_stores_load_answers_as_the_stores_do(tmp_path: Path, case: str) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    CASES[case](ws)
    ws = Path(os.path.realpath(ws))
    stores = MemoryStores(ws)
    assert needs_asking(Paths.for_workspace(ws), FS()) is (not stores.project_trusted)
    assert needs_asking(Paths.for_workspace(ws), FS()) is (case in ("a cloned card", "only MEMORY.md"))


def test_a_workspace_whose_project_store_is_the_user_store_is_never_asked(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _card(ws)
    home = ws / ".PseudoClaude"  # its memory/ is the workspace's project store: one folder, one level
    stores = MemoryStores(ws, home)
    assert not stores.has_project_level and stores.project_trusted
    assert needs_asking(Paths.for_workspace(ws, home), FS()) is False


def test_asking_loads_neither_pydantic_nor_yaml_nor_the_stores(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _card(ws)
    probe = (
        "import sys\nfrom memory.store import fs, paths, trust\n"
        "print(trust.needs_asking(paths.Paths.for_workspace(sys.argv[1]), fs.FS()))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'yaml')\n"
        "             or m in ('memory.model', 'memory.store.store', 'memory.store.stores')))"
    )
    env = {**os.environ, "PSEUDOCLAUDE_HOME": str(tmp_path / "home")}
    out = subprocess.run(
        [sys.executable, "-c", probe, str(ws)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split("\n")
    assert out[:2] == ["True", "[]"]

"""Property: whatever an op gives as ``cites`` (any text as a spec, any JSON value),
``Grounding.resolve`` never raises and never keeps a citation whose file is outside the
workspace, in ``.git/`` or in a protected folder."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memory.grounding.confine import inside
from memory.grounding.hashing import FileIds
from memory.grounding.staleness import MAX_CITES, Grounding

# Pieces that make the interesting paths: traversal, separators, git's and the stores' folders,
# symlinks leading out, ranges, control characters, a lone surrogate.
PIECES = [
    "..",
    ".",
    "/",
    "\\",
    "//",
    "src",
    "app.py",
    "Makefile",
    ".git",
    ".GIT",
    "config",
    "HEAD",
    ".PseudoClaude",
    "memory",
    "x.md",
    "pchome",
    "out",
    "leak",
    "inlink",
    "secret.txt",
    "C:",
    ":",
    "1",
    "-",
    "10-40",
    "3-1",
    "~",
    "\x00",
    "\n",
    "\x1b",
    "\ud800",
    "\udcff",
    "é",
    " ",
]
SPECS = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=8).map("".join),
    st.text(alphabet=st.characters(blacklist_categories=()), max_size=40),
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), SPECS)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["path", "lines", "blob", "x"]) | SPECS, inner, max_size=4),
    ),
    max_leaves=12,
)
CITE_DICTS = st.fixed_dictionaries({"path": SPECS}, optional={"lines": SCALARS | SPECS, "blob": SPECS})
BLOB_RE = re.compile(r"[0-9a-f]{40}|sha256:[0-9a-f]{64}")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Grounding, str, tuple[str, ...]]:
    root = Path(os.path.realpath(tmp_path_factory.mktemp("prop")))
    ws, out = root / "ws", root / "outside"
    (ws / "src").mkdir(parents=True)
    out.mkdir()
    (out / "secret.txt").write_text("secret\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "Makefile").write_text("all:\n")
    (ws / "src" / "app.py").write_text("x = 1\n")
    (ws / "out").symlink_to(out)
    (ws / "leak").symlink_to(out / "secret.txt")
    (ws / "inlink").symlink_to(ws / "src")
    (ws / ".GIT").mkdir()  # what .git is on a case-insensitive disk
    (ws / ".GIT" / "config").write_text("[core]\n")
    for folder in (ws / ".PseudoClaude" / "memory", ws / "pchome"):
        folder.mkdir(parents=True)
        (folder / "x.md").write_text("card\n")
    protected = (str(ws / ".PseudoClaude" / "memory"), str(ws / "pchome"))
    return Grounding(ws, protected, ids=FileIds()), str(ws), protected


def _assert_confined(world: tuple[Grounding, str, tuple[str, ...]], raw: Any) -> None:
    grounding, ws, protected = world
    kept, dropped = grounding.resolve(raw)
    assert len(kept) <= MAX_CITES
    for cite in kept:
        assert not os.path.isabs(cite.path) and ".." not in cite.path.split("/")
        real = os.path.realpath(os.path.join(ws, cite.path))
        assert inside(real, ws) and os.path.isfile(real)
        assert ".git" not in [p.casefold() for p in os.path.relpath(real, ws).split(os.sep)]
        assert not any(inside(real, p) for p in protected)
        assert BLOB_RE.fullmatch(cite.blob)
    for d in dropped:
        assert d.reason and "\n" not in d.reason and "\n" not in d.cite
        d.reason.encode("utf-8")  # a reason is written to the history and stderr


@given(specs=st.lists(SPECS, max_size=6))
@settings(max_examples=300, deadline=None)
@example(specs=["out/secret.txt", "leak", "inlink/app.py", "src/../Makefile", ".GIT/config", "pchome/x.md"])
@example(specs=["\ud800", "src/\ud800.py"])
def test_any_text_as_a_spec_never_raises_nor_leaves_the_workspace(
    world: tuple[Grounding, str, tuple[str, ...]], specs: list[str]
) -> None:
    _assert_confined(world, specs)


@given(value=JSON | st.lists(CITE_DICTS, max_size=4))
@settings(max_examples=300, deadline=None)
@example(value=[{"path": "leak", "blob": "0" * 40}, {"path": "Makefile", "lines": 10**30}])
def test_any_json_value_as_cites_never_raises_nor_leaves_the_workspace(
    world: tuple[Grounding, str, tuple[str, ...]], value: Any
) -> None:
    _assert_confined(world, value if isinstance(value, list) else [value])

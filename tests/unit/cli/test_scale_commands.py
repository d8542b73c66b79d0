"""`memory search QUERY [--level L] [--limit N]`, `memory pin LEVEL FILE` and `memory unpin LEVEL
FILE`, in process: the lines search_memory gives the model, grep's exit codes, an
untrusted project store left out (said on stderr), a rebuilt cache's notice, one-line errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.cli.main import main
from app.cli.memory.search import MAX_LIMIT
from memory.constants import Level, NoteType
from memory.search.cache import cache_path
from memory.store.stores import MemoryStores
from memory.store.trust import UNTRUSTED_REASON
from tests.support.memtools import trust_workspace, write_note

pytestmark = pytest.mark.plain_ws

Cli = Callable[..., tuple[int, str, str]]

LAB = "project_knowledge_lab.md"
LAB_LINE = f"project: - [project_knowledge] Lab bench — hardware ({LAB})"
REL = "project_knowledge_release.md"
REL_LINE = f"project: - [project_knowledge] Release steps ({REL})"
TONE = "user_preference_tone.md"
TONE_LINE = f"user: - [user_preference] Tone — be brief ({TONE})"


@pytest.fixture
def cli(plain_ws: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    def run(*args: str) -> tuple[int, str, str]:
        code = main(["memory", *args, "-C", str(plain_ws)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def seed(ws: Path, *, trusted: bool = True) -> MemoryStores:
    stores = MemoryStores(ws)
    if trusted:
        trust_workspace(ws)
    write_note(
        stores,
        Level.PROJECT,
        LAB,
        "Lab bench",
        "The frobnicator needs calibration before each release.\n",
        summary="hardware",
    )
    write_note(stores, Level.PROJECT, REL, "Release steps", "Tag, then run the calibration suite.\n")
    for i in range(12):
        write_note(
            stores, Level.PROJECT, f"project_knowledge_filler{i:02d}.md", f"Filler {i}", "Docker notes.\n"
        )
    write_note(
        stores,
        Level.USER,
        TONE,
        "Tone",
        "Answer briefly, also about the frobnicator.\n",
        type_=NoteType.USER_PREFERENCE,
        summary="be brief",
    )
    return stores


# -- search ----------------------------------------------------------------------------------------


def test_search_prints_the_tools_lines_best_first_and_exits_0(cli: Cli, plain_ws: Path) -> None:
    seed(plain_ws)
    code, out, err = cli("search", "frobnicator calibration")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == LAB_LINE and sorted(lines) == sorted([LAB_LINE, REL_LINE, TONE_LINE])
    assert cli("search", "frobnicator", "--level", "user") == (0, f"{TONE_LINE}\n", "")
    assert cli("search", "frobnicator calibration", "--limit", "1") == (0, f"{LAB_LINE}\n", "")
    code, out, _ = cli("search", "docker")
    assert code == 0 and len(out.splitlines()) == 10  # the default limit
    code, out, _ = cli("search", "docker", "--limit", "50")
    assert code == 0 and len(out.splitlines()) == 12


def test_search_finding_nothing_exits_1_like_grep_with_stdout_empty(cli: Cli, plain_ws: Path) -> None:
    seed(plain_ws)
    assert cli("search", "kubernetes") == (1, "", "pseudoclaude: no notes match 'kubernetes'\n")


@pytest.mark.parametrize("limit", ["0", str(MAX_LIMIT + 1), "x", "-1", "1.5", "", "²"])
def test_search_limit_is_1_to_50_or_a_one_line_usage_error(
    plain_ws: Path, capsys: pytest.CaptureFixture[str], limit: str
) -> None:
    with pytest.raises(SystemExit) as e:
        main(["memory", "search", "frobnicator", "--limit", limit, "-C", str(plain_ws)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --limit: N is a whole number from 1 to 50" in err


@pytest.mark.parametrize("query", ["", "   "])
def test_search_needs_a_query(plain_ws: Path, capsys: pytest.CaptureFixture[str], query: str) -> None:
    with pytest.raises(SystemExit) as e:
        main(["memory", "search", query, "-C", str(plain_ws)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "QUERY must name what to look for" in err


def test_an_untrusted_project_store_is_left_out_and_said_on_stderr(cli: Cli, plain_ws: Path) -> None:
    stores = seed(plain_ws, trusted=False)
    said = f"pseudoclaude: left out the project store {stores.project.dir}: {UNTRUSTED_REASON}\n"
    assert cli("search", "frobnicator calibration") == (0, f"{TONE_LINE}\n", said)
    code, out, err = cli("search", "frobnicator", "--level", "project")
    assert (code, out, err) == (1, "", said)
    code, out, err = cli("search", "docker")
    assert (code, out) == (1, "") and err == said + "pseudoclaude: no notes match 'docker'\n"
    assert not cache_path(stores.paths.home, stores.project.dir).exists()


def test_a_rebuilt_cache_is_said_in_one_line_on_stderr(cli: Cli, plain_ws: Path) -> None:
    stores = seed(plain_ws)
    assert cli("search", "frobnicator")[0] == 0
    path = cache_path(stores.paths.home, stores.project.dir)
    path.write_bytes(b"not a database at all " * 200)
    code, out, err = cli("search", "frobnicator", "--level", "project")
    assert code == 0 and out.splitlines()[0] == LAB_LINE
    assert err.count("\n") == 1 and err.startswith("pseudoclaude: the memory search cache ")
    assert "rebuilt from the cards" in err
    assert cli("search", "frobnicator", "--level", "project") == (0, f"{LAB_LINE}\n", "")


HOSTILE = [
    '"',
    "*",
    "NEAR(",
    "OR",
    "NOT frobnicator",
    "frobnicator*",
    '"frobnicator',
    "\ud800",
    "a" * 10_240,
    "title:frobnicator AND",
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries_never_break_the_search(cli: Cli, plain_ws: Path, query: str) -> None:
    seed(plain_ws)
    code, out, err = cli("search", query)
    assert code in (0, 1) and "Traceback" not in err
    if "frobnicator" in query:
        assert code == 0 and LAB_LINE in out.splitlines()
    else:
        assert (code, out) == (1, "")


# -- pin / unpin -----------------------------------------------------------------------------------


def test_pin_and_unpin_say_what_they_did_and_undo_reverts(cli: Cli, plain_ws: Path) -> None:
    stores = seed(plain_ws)
    card = stores.project.dir / LAB
    before = card.read_bytes()
    assert cli("pin", "project", LAB) == (0, f"pinned project/{LAB}\n", "")
    assert stores.read_note("project", LAB).meta.pinned
    assert cli("pin", "project", LAB) == (0, f"project/{LAB} was already pinned\n", "")
    assert cli("unpin", "project", LAB) == (0, f"unpinned project/{LAB}\n", "")
    assert not stores.read_note("project", LAB).meta.pinned
    assert cli("unpin", "project", LAB) == (0, f"project/{LAB} was not pinned\n", "")
    assert cli("pin", "user", TONE) == (0, f"pinned user/{TONE}\n", "")
    code, out, _ = cli("undo")
    assert code == 0 and out == f"reverted user/{TONE}\n"
    assert not stores.read_note("user", TONE).meta.pinned
    code, out, _ = cli("undo")  # the unpin
    assert code == 0 and stores.read_note("project", LAB).meta.pinned
    code, out, _ = cli("undo")  # the pin
    assert code == 0 and card.read_bytes() == before


@pytest.mark.parametrize(
    ("level", "name", "want"),
    [
        ("project", "nope.md", "nope.md"),
        ("project", "../x.md", "x.md"),
        ("user", "MEMORY.md", "MEMORY.md"),
        ("project", "project_knowledge_broken.md", "does not parse"),
    ],
)
def test_pin_of_a_bad_file_is_one_line_exit_1_and_changes_nothing(
    cli: Cli, plain_ws: Path, level: str, name: str, want: str
) -> None:
    stores = seed(plain_ws)
    (stores.project.dir / "project_knowledge_broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    # The first command brings the derived MEMORY.md and the git files up to date.
    assert cli("list")[0] == 0
    files = {p.name: p.read_bytes() for p in stores.project.dir.iterdir() if p.is_file()}
    code, out, err = cli("pin", level, name)
    assert (code, out) == (1, "") and err.count("\n") == 1 and err.startswith("pseudoclaude: "), err
    assert want in err
    assert {p.name: p.read_bytes() for p in stores.project.dir.iterdir() if p.is_file()} == files
    assert stores.history() == []


def test_search_of_the_project_level_of_a_workspace_without_one_says_so(
    plain_ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # PSEUDOCLAUDE_HOME inside the workspace: its project store is the user store.
    monkeypatch.setenv("PSEUDOCLAUDE_HOME", str(plain_ws / ".PseudoClaude"))
    assert main(["memory", "search", "frobnicator", "--level", "project", "-C", str(plain_ws)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "no project level" in err

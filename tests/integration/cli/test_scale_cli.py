"""Memory at scale from the command line, each command its own process: 400 cards
and one pinned card whose filename sorts last are in `memory index` with an exact overflow count;
`memory unpin` and `memory undo` take it out again; `memory search` finds a card among 2,000 by a
word of its body, and leaves an untrusted project store out, saying so on stderr."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from memory.constants import Level, NoteType
from memory.store.stores import MemoryStores
from tests.support.clitools import MEMORY_MODEL, MODEL, run_cli, system_text
from tests.support.fakeapi import FakeAnthropic, text
from tests.support.memtools import trust_workspace, write_note

pytestmark = pytest.mark.timeout(120)

LAST = "project_knowledge_zzz-kiln.md"
LAST_LINE = f"- [project_knowledge] Kiln schedule — firing order ({LAST})"
OVERFLOW_RE = re.compile(r"^\((\d+) more notes not shown \(([^)]*)\); search_memory finds them by topic")


def _stores(ws: Path, *, trusted: bool = True) -> tuple[Path, MemoryStores]:
    ws = Path(os.path.realpath(ws))
    if trusted:
        trust_workspace(ws)
    return ws, MemoryStores(ws)


def _cards_400(stores: MemoryStores) -> int:
    """350 project and 50 user cards (LAST among the project ones); their count."""
    for i in range(349):
        write_note(
            stores,
            Level.PROJECT,
            f"project_knowledge_c{i:03d}.md",
            f"Card {i}",
            f"Body {i}.\n",
            summary=f"about topic {i}",
        )
    write_note(
        stores, Level.PROJECT, LAST, "Kiln schedule", "Fire the bisque first.\n", summary="firing order"
    )
    for i in range(50):
        write_note(
            stores,
            Level.USER,
            f"user_preference_u{i:02d}.md",
            f"Pref {i}",
            f"Pref body {i}.\n",
            type_=NoteType.USER_PREFERENCE,
            summary=f"preference {i}",
        )
    return 400


def _index(ws: Path) -> tuple[list[str], int, dict[str, int]]:
    """`memory index`: its card lines, the overflow line's count and its split by level."""
    res = run_cli(None, ws, "memory", "index")
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    [overflow] = [m for m in (OVERFLOW_RE.match(line) for line in lines) if m]
    split = {level: int(n) for n, level in (part.split(" ") for part in overflow.group(2).split(", "))}
    return [line for line in lines if line.startswith("- [")], int(overflow.group(1)), split


def test_a_pinned_card_sorting_last_is_in_memory_index_with_the_exact_count_left_out(ws: Path) -> None:
    ws, stores = _stores(ws)
    total = _cards_400(stores)
    card = stores.project.dir / LAST
    before = card.read_bytes()

    shown, _, _ = _index(ws)
    assert LAST_LINE not in shown, "unpinned, a project_knowledge card sorting last is not in a cut index"

    res = run_cli(None, ws, "memory", "pin", "project", LAST)
    assert (res.code, res.out) == (0, f"pinned project/{LAST}\n"), res.err
    shown, left_out, split = _index(ws)
    assert LAST_LINE in shown
    assert left_out == total - len(shown) > 0
    project_shown = len([line for line in shown if line.startswith("- [project_knowledge]")])
    assert split.get("project", 0) == 350 - project_shown and split.get("user", 0) == 50 - (
        len(shown) - project_shown
    )

    res = run_cli(None, ws, "memory", "unpin", "project", LAST)
    assert (res.code, res.out) == (0, f"unpinned project/{LAST}\n"), res.err
    shown, left_out, _ = _index(ws)
    assert LAST_LINE not in shown and left_out == total - len(shown)

    res = run_cli(None, ws, "memory", "undo")  # the unpin: pinned again
    assert res.code == 0 and res.out == f"reverted project/{LAST}\n", res.err
    assert LAST_LINE in _index(ws)[0]
    res = run_cli(None, ws, "memory", "undo")  # the pin: the card as it was written
    assert res.code == 0 and res.out == f"reverted project/{LAST}\n", res.err
    assert card.read_bytes() == before
    assert LAST_LINE not in _index(ws)[0]


def test_memory_index_prints_exactly_the_cut_ranked_index_a_new_session_gets(
    server: FakeAnthropic, ws: Path
) -> None:
    ws, stores = _stores(ws)
    _cards_400(stores)
    assert run_cli(None, ws, "memory", "pin", "project", LAST).code == 0
    printed = run_cli(None, ws, "memory", "index").out
    assert LAST_LINE in printed.splitlines() and "more notes not shown" in printed
    server.script(MODEL, text("ok"))
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "hi", "--memory", "off")
    assert res.code == 0, res.err
    [request] = server.requests_for(MODEL)
    assert f"<memory-index>\n{printed.rstrip(chr(10))}\n</memory-index>" in system_text(request)


def test_pin_of_a_card_that_is_not_there_is_one_line_on_stderr(ws: Path) -> None:
    ws, _ = _stores(ws)
    res = run_cli(None, ws, "memory", "pin", "project", "project_knowledge_nope.md")
    assert (
        (res.code, res.out) == (1, "") and res.err.count("\n") == 1 and "project_knowledge_nope.md" in res.err
    )


TOPIC = "project_knowledge_lab-bench.md"
TOPIC_LINE = f"project: - [project_knowledge] Lab bench — hardware on the shelf ({TOPIC})"


@pytest.fixture(scope="module")
def filler(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project store folder of 1,999 cards, written once and copied into each test."""
    root = tmp_path_factory.mktemp("filler")
    (root / "ws" / ".git").mkdir(parents=True)
    stores = MemoryStores(root / "ws", root / "home")
    for i in range(1999):
        write_note(
            stores,
            Level.PROJECT,
            f"project_knowledge_n{i:04d}.md",
            f"Note {i}",
            f"Release and build notes, part {i}.\n",
            summary=f"part {i}",
        )
    return stores.project.dir


def _cards_2000(stores: MemoryStores, filler: Path) -> None:
    shutil.copytree(filler, stores.project.dir)
    # Its topic is named only in its body.
    write_note(
        stores,
        Level.PROJECT,
        TOPIC,
        "Lab bench",
        "The frobnicator calibration runs before each release.\n",
        summary="hardware on the shelf",
    )


def test_memory_search_finds_a_card_among_2000_by_a_word_of_its_body(ws: Path, filler: Path) -> None:
    ws, stores = _stores(ws)
    _cards_2000(stores, filler)
    res = run_cli(None, ws, "memory", "search", "how is the frobnicator calibrated?")
    assert (res.code, res.out, res.err) == (0, f"{TOPIC_LINE}\n", "")
    res = run_cli(None, ws, "memory", "search", "frobnicator", "--level", "user")
    assert (res.code, res.out) == (1, "") and res.err == "pseudoclaude: no notes match 'frobnicator'\n"


def test_memory_search_leaves_an_untrusted_project_store_out_and_says_so(ws: Path, filler: Path) -> None:
    ws, stores = _stores(ws, trusted=False)
    _cards_2000(stores, filler)
    res = run_cli(None, ws, "memory", "search", "frobnicator calibration")
    assert (res.code, res.out) == (1, "")
    first, second = res.err.splitlines()
    assert first.startswith(f"pseudoclaude: left out the project store {stores.project.dir}: ")
    assert "not trusted yet" in first and second == "pseudoclaude: no notes match 'frobnicator calibration'"
    trust_workspace(ws)
    res = run_cli(None, ws, "memory", "search", "frobnicator calibration")
    assert (res.code, res.out, res.err) == (0, f"{TOPIC_LINE}\n", "")

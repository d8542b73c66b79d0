"""The pieces of a turn's memory receipt: read_memory counts a card's read and says whether it was
stale; the receipt parses the index a Run was shown and keeps the reads in order, each once."""

from __future__ import annotations

import threading
from pathlib import Path

from app.agent.memory_bridge.receipts import RECEIPT_MAX, Receipt, shown_cards
from app.agent.tools import CardRead, ToolContext, run_tool
from memory.model import MemoryText
from memory.store.index import merge_index_lines, stale_mark
from memory.store.store import StoreError

HEADER = (
    "Cites (checked now):\n- Makefile: Makefile changed since this card was written\n"
    "This card is STALE: check it against the code before relying on it.\n\n"
)


class CountingMemory:
    def __init__(
        self, bodies: dict[str, str], *, fail_count: bool = False, stale: frozenset[str] = frozenset()
    ) -> None:
        self.bodies = bodies
        self.stale = stale  # the cards the stores find stale
        self.fail_count = fail_count
        self.counted: list[tuple[str, str]] = []
        self.threads: set[int] = set()

    def read_memory_text(self, level: str, filename: str) -> MemoryText:
        self.threads.add(threading.get_ident())
        if filename not in self.bodies:
            raise StoreError(f"no note named {filename!r} in the {level} store")
        return MemoryText(self.bodies[filename], stale=filename in self.stale)

    def record_read(self, level: str, filename: str) -> None:
        self.threads.add(threading.get_ident())
        if self.fail_count:
            raise RuntimeError("the usage database is on fire")
        self.counted.append((level, filename))


def _ctx(tmp_path: Path, memory: CountingMemory) -> ToolContext:
    return ToolContext(workspace=tmp_path, memory=memory)


async def test_read_memory_counts_a_card_read_in_the_reads_thread_and_names_the_card(tmp_path: Path) -> None:
    mem = CountingMemory({"a.md": "the body\n"})
    r = await run_tool("read_memory", {"level": "project", "filename": "a.md"}, _ctx(tmp_path, mem))
    assert r.content == "the body\n" and not r.is_error
    assert r.card == CardRead(level="project", filename="a.md", stale=False)
    assert mem.counted == [("project", "a.md")]
    assert len(mem.threads) == 1 and threading.get_ident() not in mem.threads  # one worker, not the loop


async def test_the_index_a_missing_card_and_a_page_past_the_end_count_nothing(tmp_path: Path) -> None:
    mem = CountingMemory({"MEMORY.md": "- [project_knowledge] A (a.md)\n", "a.md": "one line\n"})
    ctx = _ctx(tmp_path, mem)
    index = await run_tool("read_memory", {"level": "project", "filename": "MEMORY.md"}, ctx)
    assert not index.is_error and index.card is None
    missing = await run_tool("read_memory", {"level": "project", "filename": "gone.md"}, ctx)
    assert missing.is_error and missing.card is None
    past = await run_tool("read_memory", {"level": "project", "filename": "a.md", "offset": 5}, ctx)
    assert past.is_error and "past the end" in past.content and past.card is None
    assert mem.counted == []


async def test_a_failing_count_never_fails_the_read(tmp_path: Path) -> None:
    mem = CountingMemory({"a.md": "the body\n"}, fail_count=True)
    r = await run_tool("read_memory", {"level": "user", "filename": "a.md"}, _ctx(tmp_path, mem))
    assert not r.is_error and r.content == "the body\n" and r.card is not None


async def test_a_stale_card_is_said_stale_even_when_a_later_page_is_read(tmp_path: Path) -> None:
    body = "".join(f"line {i}\n" for i in range(1, 11))
    mem = CountingMemory(
        {"s.md": HEADER + body, "f.md": body, "e.md": HEADER}, stale=frozenset({"s.md", "e.md"})
    )
    ctx = _ctx(tmp_path, mem)
    page = await run_tool("read_memory", {"level": "project", "filename": "s.md", "offset": 8}, ctx)
    assert "STALE" not in page.content and page.card is not None and page.card.stale
    fresh = await run_tool("read_memory", {"level": "project", "filename": "f.md"}, ctx)
    assert fresh.card is not None and not fresh.card.stale
    # A fresh cited card whose body says the words: only the header above the body counts.
    mem.bodies["m.md"] = (
        "Cites (checked now):\n- Makefile: unchanged since the card was written\n\nThis card is STALE: x\n"
    )
    mention = await run_tool("read_memory", {"level": "project", "filename": "m.md"}, ctx)
    assert mention.card is not None and not mention.card.stale


def _line(name: str, title: str = "T") -> str:
    return f"- [project_knowledge] {title} ({name})"


def test_shown_cards_lists_both_levels_in_index_order_and_the_stale_marked_ones() -> None:
    project = [stale_mark(_line("b.md"), "Makefile changed since this card was written"), _line("a.md")]
    user = ["- [user_preference] Tone (c.md)"]
    index = merge_index_lines(project, user)
    assert shown_cards(index) == (["project/b.md", "project/a.md", "user/c.md"], ["project/b.md"])
    assert shown_cards("") == ([], [])


def test_shown_cards_ignores_the_overflow_line_and_stops_at_the_bound() -> None:
    lines = [_line(f"n{i:04}.md") for i in range(RECEIPT_MAX + 50)]
    index = (
        "## Project Memory\n" + "\n".join(lines) + '\n\n(250 more notes not shown; read_memory "MEMORY.md")'
    )
    shown, stale = shown_cards(index)
    assert shown == [f"project/n{i:04}.md" for i in range(RECEIPT_MAX)] and stale == []


def test_a_receipt_keeps_reads_in_order_once_each_and_a_stale_read_stays_stale() -> None:
    receipt = Receipt(merge_index_lines([stale_mark(_line("b.md"), "gone"), _line("a.md")], []))
    receipt.saw(CardRead(level="user", filename="u.md"))
    receipt.saw(CardRead(level="project", filename="a.md", stale=True))
    receipt.saw(CardRead(level="user", filename="u.md"))
    receipt.saw(CardRead(level="project", filename="a.md", stale=False))
    receipt.saw(CardRead(level="project", filename="b.md"))
    assert receipt.record() == {
        "shown": ["project/b.md", "project/a.md"],
        "read": ["user/u.md", "project/a.md", "project/b.md"],
        "stale": ["project/b.md", "project/a.md"],
    }


def test_a_receipts_reads_are_bounded() -> None:
    receipt = Receipt()
    for i in range(RECEIPT_MAX + 10):
        receipt.saw(CardRead(level="project", filename=f"n{i}.md"))
    receipt.saw(CardRead(level="project", filename="n0.md", stale=True))  # one already kept still updates
    rec = receipt.record()
    assert len(rec["read"]) == RECEIPT_MAX and rec["stale"] == ["project/n0.md"]

"""``memory import`` of hostile sources through the real CLI: a CLAUDE.md, an AGENTS.md or a
Claude Code memory folder holding an Anthropic key, an OSC 52 clipboard write, a screen clear,
a title escape and an HTML comment instruction. What any preview shows (``--dry-run``, the held
job's listing, the pending screen's data) is what is written: the key redacted, no escape byte;
the card hiding text from a rendered view is listed first and counted as the trust window counts
it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from app.services.jobs import job_info
from memory.jobs.spool import Spool
from memory.jobs.views import job_views
from memory.store.stores import MemoryStores
from tests.support.clitools import run_cli
from tests.support.importdata import (
    HIDDEN_INSTRUCTION,
    HOSTILE_HIDDEN_TITLE,
    HOSTILE_KEY,
    HOSTILE_MD,
    HOSTILE_STRIPPED_TITLES,
    hostile_memory_folder,
)

pytestmark = [pytest.mark.timeout(90), pytest.mark.plain_ws]

REDACTED = "[REDACTED:anthropic_key]"
HIDDEN_LINE = f"    ⚠ HTML comment: {HIDDEN_INSTRUCTION}"
# What the summary says: the trust window's count of cards hiding text, and the cards cleaned.
HIDDEN_COUNT = (
    "1 card holds HTML comments, hidden markup or tag-like text that the model reads and a rendered "
    "view hides"
)
_CARD_LINE = re.compile(r"^(?:would create|\d+ create) \S+  \[\w+\] (.+)$", re.MULTILINE)
STRIPPED_COUNT = "terminal escapes and control or invisible characters removed from 2 cards"


@pytest.fixture(params=["CLAUDE.md", "AGENTS.md", "claude-code-memory"])
def source(request: pytest.FixtureRequest, ws: Path) -> Path:
    """Each kind of source, all saying the same five things (one card each)."""
    if request.param == "claude-code-memory":
        return hostile_memory_folder(Path(os.environ["HOME"]))
    path = ws / request.param
    path.write_text(HOSTILE_MD)
    return path


def _no_secret_no_escape(text: str) -> None:
    assert HOSTILE_KEY[:20] not in text, "the key is shown in clear"
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text and "\x9d" not in text


def _titles_in_order(out: str) -> list[str]:
    """The titles of the cards a preview lists (``would create …`` or ``3 create …``), in order."""
    return [m.group(1) for m in _CARD_LINE.finditer(out)]


def test_dry_run_shows_what_would_be_written_hidden_markup_first(ws: Path, source: Path) -> None:
    res = run_cli(None, ws, "memory", "import", str(source), "--dry-run")
    assert res.code == 0 and res.err == "", res.err
    _no_secret_no_escape(res.out)
    assert REDACTED in res.out
    titles = _titles_in_order(res.out)
    assert titles[0] == HOSTILE_HIDDEN_TITLE, titles
    assert titles[1:3] == HOSTILE_STRIPPED_TITLES, titles
    # The fragment, raw but safe, on the line under the card's source.
    assert (
        res.out.splitlines()[1].startswith("    source: import:") and res.out.splitlines()[2] == HIDDEN_LINE
    )
    summary = res.out.splitlines()[-1]
    assert summary.startswith("dry run: 5 cards would be made, 0 skipped; ") and summary.endswith(
        "nothing was changed"
    )
    assert HIDDEN_COUNT in summary and STRIPPED_COUNT in summary
    assert not (ws / ".PseudoClaude").exists()


def test_written_cards_hold_no_escape_and_the_summary_counts_as_the_trust_window(
    ws: Path, source: Path
) -> None:
    res = run_cli(None, ws, "memory", "import", str(source), "--yes")
    assert res.code == 0, res.err
    _no_secret_no_escape(res.out + res.err)
    files = sorted((ws / ".PseudoClaude" / "memory").glob("*_*.md"))
    assert len(files) == 5
    written = "".join(f.read_text() for f in files)
    _no_secret_no_escape(written)
    assert REDACTED in written and "Run `make test` before pushing." in written
    assert "Keep the output short. Really." in written
    # The hidden instruction is kept (a person may want it) and said, with the count the trust
    # window computes over the written cards.
    assert HIDDEN_INSTRUCTION in written
    markup = MemoryStores(ws).trust_preview().markup
    assert list(markup.values()) == [("HTML comment", HIDDEN_INSTRUCTION)]
    (hidden_file,) = markup
    assert f"of these 5 cards: {HIDDEN_COUNT} (listed below, with the text); {STRIPPED_COUNT}" in res.out
    assert f"⚠ project/{hidden_file}: HTML comment: {HIDDEN_INSTRUCTION}" in res.out


def test_the_review_preview_shows_the_redacted_text(ws: Path, source: Path) -> None:
    res = run_cli(None, ws, "memory", "import", str(source))
    assert res.code == 0, res.err
    _no_secret_no_escape(res.out)
    assert REDACTED in res.out
    job = res.out.splitlines()[0].split()[1].rstrip(":")
    # The job's excerpt (cut to its width after a long folder name) counts them too.
    assert "(5 cards, 1 with hidden" in res.out.splitlines()[0]
    assert _titles_in_order(res.out)[0] == HOSTILE_HIDDEN_TITLE
    assert f"of these 5 cards: {HIDDEN_COUNT} (listed first, with the text); {STRIPPED_COUNT}" in res.out
    pending = run_cli(None, ws, "memory", "pending")
    assert f"{job}  held" in pending.out and "(5 cards, 1 with hidden" in pending.out

    # The pending screen's data: each held card's text as the review shows it.
    stores = MemoryStores(ws)
    (view,) = job_views(Spool(stores.paths, stores.fs).list(ws), alive=False, max_attempts=3)
    shown = "\n".join(op.after or "" for op in job_info(stores, view).ops)
    _no_secret_no_escape(shown)
    assert REDACTED in shown and HIDDEN_INSTRUCTION in shown

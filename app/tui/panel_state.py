"""What the memory side panel shows, read from the stores: the index the next Run will see.

Synchronous and reading the disk: the App calls :func:`build_panel_state` in a worker thread
after a job applies, a store changes on disk, or a job's state moves, and posts the result to
the panel. The cards come from the merged index exactly as the system prompt would embed it
(``MemoryStores.merged_index``), so the panel shows what a new Run gets, cut included; an
untrusted project store is not in that index, so its cards are listed from its card files
with a note saying they are not used. ``MEMORY.md`` is never read here.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from memory.constants import Level
from memory.store.index import INDEX_LINE_RE, PROJECT_HEADER, USER_HEADER
from memory.store.store import StoreError
from memory.text.terminal import strip_terminal
from widgets.panel.memory_panel import PanelCard, PanelJob, PanelState

if TYPE_CHECKING:
    from memory.jobs.views import JobView
    from memory.store.stores import MemoryStores

__all__ = [
    "NO_PROJECT_LEVEL",
    "UNTRUSTED_NOTE",
    "build_panel_state",
    "cut_text",
    "index_files",
    "job_line",
    "state_files",
]

UNTRUSTED_NOTE = "untrusted — not used until you trust it"
NO_PROJECT_LEVEL = "no project level here"
SUMMARY_SEP = " — "
_OVERFLOW_RE = re.compile(r"^\((\d+) more notes? not shown")

Key = tuple[str, str]  # (level, filename)


def build_panel_state(
    stores: MemoryStores,
    jobs: list[JobView],
    run_start_files: frozenset[Key] | None,
    *,
    now: _dt.datetime | None = None,
) -> PanelState:
    """The panel's state now. ``run_start_files``: the (level, filename) pairs in the index when
    the current Run started (``index_files`` of the Runner's shown index, or ``state_files`` of
    the panel state then); cards not among them are marked new. None: no Run yet, nothing new."""
    prompt = stores.prompt_index()
    entries, _ = _parse_merged(prompt.text)
    project_note: str | None = None
    if not stores.has_project_level:
        project_note = NO_PROJECT_LEVEL
        project_lines: list[str] = []
    elif not getattr(stores, "project_trusted", True):
        # Not in the merged index (never in a prompt), still listed so the person can judge it.
        # Cut as the index would be once trusted: a 10,000-card clone lists a screenful, not all.
        project_lines = _parse_merged(stores.merged_index(include_untrusted=True))[0]["project"]
        project_note = UNTRUSTED_NOTE if project_lines else None
    else:
        project_lines = entries["project"]

    trusted_project = not stores.has_project_level or bool(getattr(stores, "project_trusted", True))

    def cards(level: str, lines: Iterable[str], trusted: bool) -> tuple[PanelCard, ...]:
        out = []
        for line in lines:
            card = _card(stores, level, line)
            if card is None:
                continue
            # An untrusted card is in no Run's index: "new" would mean nothing for it.
            is_new = trusted and run_start_files is not None and (level, card.filename) not in run_start_files
            out.append(
                PanelCard(
                    type=card.type,
                    title=card.title,
                    summary=card.summary,
                    filename=card.filename,
                    new=is_new,
                    untrusted=not trusted,
                    stale=card.stale,
                )
            )
        return tuple(out)

    # The split at a glance (DESIGN §15): the cards the prompt's budget left out, reachable by
    # search_memory and recall; nothing when everything fits.
    left_out = len(prompt.left_out)
    cut_note = cut_text(left_out) if left_out else None
    return PanelState(
        project=cards("project", project_lines, trusted_project),
        user=cards("user", entries["user"], True),
        cut_note=cut_note,
        project_note=project_note,
        jobs=tuple(job_line(j, now=now) for j in jobs),
    )


def cut_text(left_out: int) -> str:
    """The panel's line for a cut index: "312 cards not in the prompt"."""
    return f"{left_out:,} {'card' if left_out == 1 else 'cards'} not in the prompt"


def index_files(merged: str) -> frozenset[Key]:
    """The (level, filename) pairs a merged index shows: what a Run that started with it saw."""
    entries, _ = _parse_merged(merged)
    out = set()
    for level, lines in entries.items():
        for line in lines:
            m = INDEX_LINE_RE.match(line)
            if m is not None:
                out.add((level, m.group("filename")))
    return frozenset(out)


def state_files(state: PanelState) -> frozenset[Key]:
    """The (level, filename) pairs of a panel state's cards (for ``run_start_files``)."""
    return frozenset(
        [("project", c.filename) for c in state.project] + [("user", c.filename) for c in state.user]
    )


def _parse_merged(merged: str) -> tuple[dict[str, list[str]], int]:
    """The index lines per level of a merged index, and how many notes its overflow line hides."""
    entries: dict[str, list[str]] = {"project": [], "user": []}
    level: str | None = None
    hidden = 0
    for line in merged.split("\n"):
        if line == PROJECT_HEADER:
            level = "project"
        elif line == USER_HEADER:
            level = "user"
        elif (m := _OVERFLOW_RE.match(line)) is not None:
            hidden = int(m.group(1))
        elif level is not None and INDEX_LINE_RE.match(line):
            entries[level].append(line)
    return entries, hidden


def _card(stores: MemoryStores, level: str, line: str) -> PanelCard | None:
    m = INDEX_LINE_RE.match(line)
    if m is None:
        return None
    filename = m.group("filename")
    text = m.group("text")
    if text.count(SUMMARY_SEP) == 1:
        title, summary = text.split(SUMMARY_SEP)
    elif SUMMARY_SEP not in text:
        title, summary = text, ""
    else:
        # " — " inside a title or summary: the note's own fields say where one ends.
        title, summary = _split_by_note(stores, level, filename, text)
    return PanelCard(
        type=m.group("type"),
        title=strip_terminal(title, keep_newlines=False),
        summary=strip_terminal(summary, keep_newlines=False),
        filename=strip_terminal(filename, keep_newlines=False),
        # The index line's stale mark (DESIGN §14), apart from the title and summary.
        stale=None if m.group("stale") is None else strip_terminal(m.group("stale"), keep_newlines=False),
    )


def _split_by_note(stores: MemoryStores, level: str, filename: str, text: str) -> tuple[str, str]:
    try:
        meta = stores.store(Level(level)).read_note(filename).meta
    except (StoreError, OSError, ValueError):
        meta = None
    if meta is not None and text == f"{meta.title}{SUMMARY_SEP}{meta.summary}":
        return meta.title, meta.summary
    title, _, summary = text.partition(SUMMARY_SEP)
    return title, summary


# -- jobs ------------------------------------------------------------------------------------


def job_line(job: JobView, *, now: _dt.datetime | None = None) -> PanelJob:
    """One compact line for a job: "extracting · <excerpt>", "retrying 2/3 in 4s", "failed: …"."""
    failed = job.state in ("failed", "damaged")
    if job.state == "retrying":
        head = f"retrying {job.attempt}/{job.max_attempts}"
        wait = _seconds_until(job.next_try_at, now)
        if wait is not None:
            head += f" in {wait}s"
    elif job.state == "failed":
        head = f"failed: {job.reason or 'unknown reason'}"
    elif job.state == "damaged":
        head = f"damaged job file: {job.reason or job.id}"
    elif job.state == "held":
        head = "held for review"
    else:
        head = job.state  # queued, extracting, applying, orphaned
    excerpt = " ".join(job.excerpt.split())
    line = head if failed or not excerpt else f"{head} · {excerpt}"
    return PanelJob(job_id=job.id, line=strip_terminal(line, keep_newlines=False), failed=failed)


def _seconds_until(stamp: str | None, now: _dt.datetime | None) -> int | None:
    if not stamp:
        return None
    try:
        when = _dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.UTC)
    now = now or _dt.datetime.now(_dt.UTC)
    return max(0, round((when - now).total_seconds()))

"""What the memory side panel shows, read from the stores: the index the next Run will see.

Synchronous and reading the disk: the App calls :func:`build_panel_state` in a worker thread
after a job applies, a store changes on disk, or a job's state moves, and posts the result to
the panel. The cards come from the merged index exactly as the system prompt would embed it
(``MemoryStores.merged_index``), so the panel shows what a new Run gets, cut included; an
untrusted project store is not in that index, so its cards are listed from its card files
with a note saying they are not used. ``MEMORY.md`` is never read here.

Sharing through git: a card written by someone else (its front matter's ``author``
differs from this person's git ``user.name``) says who; a card git left with conflict markers is
in no index, so it is found among the files no index line stands for and listed apart.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from memory.constants import INDEX_FILE, Level
from memory.store.index import INDEX_LINE_RE, PROJECT_HEADER, USER_HEADER
from memory.store.store import StoreError
from memory.text.terminal import strip_terminal
from widgets.panel.memory_panel import PanelCard, PanelJob, PanelState

if TYPE_CHECKING:
    from memory.jobs.views import JobView
    from memory.model import NoteMeta
    from memory.store.stores import MemoryStores, PromptIndex

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
    sync: tuple[str, bool] | None = None,
) -> PanelState:
    """The panel's state now. ``run_start_files``: the (level, filename) pairs in the index when
    the current Run started (``index_files`` of the Runner's shown index, or ``state_files`` of
    the panel state then); cards not among them are marked new. None: no Run yet, nothing new.
    ``sync``: the user store's last sync (its line, whether it failed), shown as it is.
    Runs ``git config`` (cached) for this person's name: call it in a thread."""
    prompt = stores.prompt_index()
    entries, _ = _parse_merged(prompt.text)
    project_note: str | None = None
    project_prompt = prompt
    if not stores.has_project_level:
        project_note = NO_PROJECT_LEVEL
        project_lines: list[str] = []
    elif not getattr(stores, "project_trusted", True):
        # Not in the merged index (never in a prompt), still listed so the person can judge it.
        # Cut as the index would be once trusted: a 10,000-card clone lists a screenful, not all.
        project_prompt = stores.prompt_index(include_untrusted=True)
        project_lines = _parse_merged(project_prompt.text)[0]["project"]
        project_note = UNTRUSTED_NOTE if project_lines else None
    else:
        project_lines = entries["project"]

    trusted_project = not stores.has_project_level or bool(getattr(stores, "project_trusted", True))
    me = {level: _my_name(stores, level) for level in ("project", "user")}

    def cards(level: str, lines: Iterable[str], trusted: bool) -> tuple[PanelCard, ...]:
        out = []
        for line in lines:
            card = _card(stores, level, line, me[level])
            if card is None:
                continue
            # An untrusted card is in no Run's index: "new" would mean nothing for it.
            is_new = trusted and run_start_files is not None and (level, card.filename) not in run_start_files
            out.append(replace(card, new=is_new, untrusted=not trusted))
        return tuple(out)

    conflicted = _conflicted(stores, "user", prompt, True)
    if stores.has_project_level:
        conflicted = _conflicted(stores, "project", project_prompt, trusted_project) + conflicted

    # The split at a glance: the cards the prompt's budget left out, reachable by
    # search_memory and recall; nothing when everything fits.
    cut_note = cut_text(len(prompt.left_out), len(prompt.pinned_left_out)) if prompt.left_out else None
    return PanelState(
        project=cards("project", project_lines, trusted_project),
        user=cards("user", entries["user"], True),
        cut_note=cut_note,
        project_note=project_note,
        jobs=tuple(job_line(j, now=now) for j in jobs),
        conflicted=conflicted,
        sync_note=None if sync is None else strip_terminal(sync[0], keep_newlines=False) or None,
        sync_failed=sync is not None and sync[1],
    )


def _my_name(stores: MemoryStores, level: str) -> str:
    """This person's git ``user.name`` where a card of ``level`` is written ("" unknown)."""
    layout = getattr(stores, "layout", None)
    try:
        return layout.author(level) if layout is not None else ""
    except (OSError, ValueError):
        return ""


def _conflicted(stores: MemoryStores, level: str, prompt: PromptIndex, trusted: bool) -> tuple[PanelCard, ...]:
    """The conflicted cards of a level: among the card files that neither the index's lines
    nor its cut account for (files that do not parse: few), the ones with conflict markers.
    A folder listing and a set difference, not a parse of every card: 10,000 cards stay cheap."""
    store = stores.store(Level(level))
    prefix = f"{level}/"
    parsed = {k[len(prefix):] for k in (*prompt.shown, *prompt.left_out) if k.startswith(prefix)}
    out = []
    for name in sorted(store.entries()):
        if name in parsed or name == INDEX_FILE or not name.endswith(".md") or name.startswith("."):
            continue
        try:
            note = store.read_note(name)
        except (StoreError, OSError, ValueError):
            continue  # unsafe or gone: doctor says why; nothing to resolve here
        if note.conflict is None:
            continue
        out.append(PanelCard(
            type=str(note.meta.type),
            title=strip_terminal(note.meta.title, keep_newlines=False),
            summary="",
            filename=strip_terminal(name, keep_newlines=False),
            untrusted=not trusted,
            level=level,
        ))
    return tuple(out)


def cut_text(left_out: int, pinned: int = 0) -> str:
    """The panel's line for a cut index: "312 cards not in the prompt", and when more cards are
    pinned than the budget holds, "; 12 pinned cards did not fit"."""
    text = f"{left_out:,} {'card' if left_out == 1 else 'cards'} not in the prompt"
    if pinned:
        text += f"; {pinned:,} pinned {'card' if pinned == 1 else 'cards'} did not fit"
    return text


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


def _card(stores: MemoryStores, level: str, line: str, me: str = "") -> PanelCard | None:
    m = INDEX_LINE_RE.match(line)
    if m is None:
        return None
    filename = m.group("filename")
    text = m.group("text")
    meta = _meta(stores, level, filename)
    if text.count(SUMMARY_SEP) == 1:
        title, summary = text.split(SUMMARY_SEP)
    elif SUMMARY_SEP not in text:
        title, summary = text, ""
    else:
        # " — " inside a title or summary: the note's own fields say where one ends.
        title, summary = _split_by_note(meta, text)
    author = meta.author if meta is not None else ""
    return PanelCard(
        type=m.group("type"),
        title=strip_terminal(title, keep_newlines=False),
        summary=strip_terminal(summary, keep_newlines=False),
        filename=strip_terminal(filename, keep_newlines=False),
        # The index line's stale mark, apart from the title and summary.
        stale=None if m.group("stale") is None else strip_terminal(m.group("stale"), keep_newlines=False),
        # Only someone else's name: a card of one's own needs no "by".
        author="" if author == me else strip_terminal(author, keep_newlines=False),
    )


def _meta(stores: MemoryStores, level: str, filename: str) -> NoteMeta | None:
    """The card's front matter, from the parse cache while its file is unchanged."""
    try:
        return stores.store(Level(level)).read_note(filename).meta
    except (StoreError, OSError, ValueError):
        return None


def _split_by_note(meta: NoteMeta | None, text: str) -> tuple[str, str]:
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

"""What the memory side panel shows: the stores' index entries and the jobs, as the panel's state.

A presenter, reading nothing: the App builds an ``IndexView`` (app/services/index.py) in a worker
thread after a job applies, a store changes on disk, or a job's state moves, and
:func:`build_panel_state` turns it and the jobs into the widgets' state. The cards are the prompt's
index entries, so the panel shows what a new Run gets, cut included; an untrusted project store's
cards are listed with a note saying they are not used.

Sharing through git: a card written by someone else (its front matter's ``author``
differs from this person's git ``user.name``) says who; a card git left with conflict markers is
in no index, and is listed apart.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from memory.text.terminal import strip_terminal
from widgets.panel.memory_panel import PanelCard, PanelJob, PanelState

if TYPE_CHECKING:
    from app.services.index import ConflictedCard, IndexView
    from memory.model import IndexEntry

__all__ = [
    "NO_PROJECT_LEVEL",
    "UNTRUSTED_NOTE",
    "build_panel_state",
    "cut_text",
    "job_line",
    "state_files",
]

UNTRUSTED_NOTE = "untrusted — not used until you trust it"
NO_PROJECT_LEVEL = "no project level here"

Key = tuple[str, str]  # (level, filename)


class JobLine(Protocol):
    """What a job's line says of it (a ``memory.jobs.views.JobView``)."""

    @property
    def id(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def excerpt(self) -> str: ...

    @property
    def attempt(self) -> int: ...

    @property
    def max_attempts(self) -> int: ...

    @property
    def reason(self) -> str | None: ...

    @property
    def next_try_at(self) -> str | None: ...


def build_panel_state(
    index: IndexView,
    jobs: Sequence[JobLine],
    run_start_files: frozenset[Key] | None,
    *,
    now: _dt.datetime | None = None,
    sync: tuple[str, bool] | None = None,
) -> PanelState:
    """The panel's state for ``index`` and ``jobs``. ``run_start_files``: the (level, filename)
    pairs in the index when the current Run started (``IndexService.note_files`` then, or
    ``state_files`` of the panel state then); cards not among them are marked new. None: no Run
    yet, nothing new. ``sync``: the user store's last sync (its line, whether it failed), shown as it is."""
    project_note: str | None = None
    if not index.has_project_level:
        project_note = NO_PROJECT_LEVEL
    elif not index.project_trusted:
        project_note = UNTRUSTED_NOTE if index.project else None
    trusted_project = not index.has_project_level or index.project_trusted

    def cards(entries: Iterable[IndexEntry], trusted: bool) -> tuple[PanelCard, ...]:
        # An untrusted card is in no Run's index: "new" would mean nothing for it.
        return tuple(
            _card(
                e,
                index.others_name(e),
                untrusted=not trusted,
                new=trusted
                and run_start_files is not None
                and (str(e.level), e.filename) not in run_start_files,
            )
            for e in entries
        )

    # The split at a glance: the cards the prompt's budget left out, reachable by
    # search_memory and recall; nothing when everything fits.
    cut_note = cut_text(index.left_out, index.pinned_left_out) if index.left_out else None
    return PanelState(
        project=cards(index.project, trusted_project),
        user=cards(index.user, True),
        cut_note=cut_note,
        project_note=project_note,
        jobs=tuple(job_line(j, now=now) for j in jobs),
        conflicted=tuple(
            _conflicted(c, trusted=trusted_project or c.level != "project") for c in index.conflicted
        ),
        sync_note=None if sync is None else strip_terminal(sync[0], keep_newlines=False) or None,
        sync_failed=sync is not None and sync[1],
    )


def _card(entry: IndexEntry, author: str, *, untrusted: bool, new: bool) -> PanelCard:
    return PanelCard(
        type=str(entry.type),
        title=_one_line(entry.title),
        summary=_one_line(entry.summary),
        filename=_one_line(entry.filename),
        new=new,
        untrusted=untrusted,
        stale=None if entry.stale is None else _one_line(entry.stale),  # apart from the title and summary
        author=_one_line(author),  # only someone else's name: a card of one's own needs no "by"
    )


def _conflicted(card: ConflictedCard, *, trusted: bool) -> PanelCard:
    return PanelCard(
        type=card.type,
        title=_one_line(card.title),
        summary="",
        filename=_one_line(card.filename),
        untrusted=not trusted,
        level=card.level,
    )


def _one_line(text: str) -> str:
    return strip_terminal(text, keep_newlines=False)


def cut_text(left_out: int, pinned: int = 0) -> str:
    """The panel's line for a cut index: "312 cards not in the prompt", and when more cards are
    pinned than the budget holds, "; 12 pinned cards did not fit"."""
    text = f"{left_out:,} {'card' if left_out == 1 else 'cards'} not in the prompt"
    if pinned:
        text += f"; {pinned:,} pinned {'card' if pinned == 1 else 'cards'} did not fit"
    return text


def state_files(state: PanelState) -> frozenset[Key]:
    """The (level, filename) pairs of a panel state's cards (for ``run_start_files``)."""
    return frozenset(
        [("project", c.filename) for c in state.project] + [("user", c.filename) for c in state.user]
    )


# -- jobs ------------------------------------------------------------------------------------


def job_line(job: JobLine, *, now: _dt.datetime | None = None) -> PanelJob:
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

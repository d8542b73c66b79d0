"""The memory screens' states straight from the stores, as a test builds them: the cards and jobs
services' blocking reads (app/services/) mapped by the presenter (app/tui/screens/memory_views.py) —
the two halves the app runs on either side of the event loop."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence

from app.services.cards import list_cards, read_card, stored_card
from app.services.jobs import pending_jobs
from app.tui.screens import memory_views
from app.tui.screens.applied_record import AppliedRecord
from memory.jobs.views import JobView
from memory.model import Note
from memory.store.stores import MemoryStores
from widgets.cards.card_list import CardRow
from widgets.cards.draft import CardDraft
from widgets.pending.state import PendingState

__all__ = ["card_rows", "draft_of", "pending_state", "read_draft"]


def card_rows(stores: MemoryStores, *, now: _dt.datetime | None = None) -> tuple[list[CardRow], str | None]:
    return memory_views.card_rows(list_cards(stores, now=now))


def read_draft(stores: MemoryStores, level: str, filename: str) -> tuple[CardDraft, str] | None:
    return memory_views.disk_draft(read_card(stores, level, filename))


def draft_of(note: Note) -> CardDraft:
    return memory_views.draft_of(stored_card(note))


def pending_state(
    stores: MemoryStores,
    views: Sequence[JobView],
    orphans: Iterable[JobView],
    applied: Iterable[AppliedRecord],
    mode: str,
    note: str | None = None,
) -> PendingState:
    return memory_views.pending_state(pending_jobs(stores, views, orphans, mode), applied, note)

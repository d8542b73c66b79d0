"""The services of one workspace's runtime, built together once the runtime exists.

Importing this module loads every service's modules and the stores': import it off the event loop,
where the runtime is built."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.services.cards import CardsService
from app.services.extensions import ExtensionsService
from app.services.index import IndexService
from app.services.jobs import JobsService
from app.services.rewind import RewindService
from app.services.session import SessionService
from app.services.sharing import SharingService
from app.services.turn import TurnService

if TYPE_CHECKING:
    from app.agent.runtime import Runtime


@dataclass(frozen=True)
class Services:
    """One per runtime: the features the screens and commands call."""

    turn: TurnService
    session: SessionService
    cards: CardsService
    jobs: JobsService
    index: IndexService
    sharing: SharingService
    extensions: ExtensionsService
    rewind: RewindService

    @classmethod
    def for_runtime(cls, rt: Runtime, *, card_reads: threading.Lock | None = None) -> Services:
        """Every service over ``rt``'s parts. ``card_reads``: the lock whole-store card reads take
        turns on (the app's panel and trust window share it)."""
        cards = CardsService(rt.stores, rt.search, card_reads=card_reads)
        return cls(
            turn=TurnService(rt),
            session=SessionService(rt),
            cards=cards,
            jobs=JobsService(rt.manager, rt.stores, lambda: rt.memory_mode),
            index=IndexService(rt.stores),
            sharing=SharingService(rt.stores, rt.settings),
            extensions=ExtensionsService(rt),
            rewind=RewindService(rt, cards),
        )

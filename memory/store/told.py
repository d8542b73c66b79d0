"""What a reader was told changed in the store folders since its last look: an announced write.

A store's pass over its folder lists it and stats every card, to find what changed since its last
pass. A reader that was told exactly what changed (the memory manager's events name the cards a
batch wrote and deleted) says so with ``told_cards``: inside it, a pass of such a folder stats and
reads only those cards and takes the others from its last pass (memory/store/store.py). Every
other reader (a Run's index, search, a command) lists the folder as before. The scope is the
calling thread's (a context variable), so no other reader ever trusts what this one was told.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

__all__ = ["told_about", "told_cards"]

_TOLD: ContextVar[Mapping[str, frozenset[str]] | None] = ContextVar("told_cards", default=None)


@contextmanager
def told_cards(changed: Mapping[Path, Collection[str]]) -> Iterator[None]:
    """Passes in this block trust each named folder's last pass but for these cards (filenames)."""
    token = _TOLD.set({str(folder): frozenset(names) for folder, names in changed.items()})
    try:
        yield
    finally:
        _TOLD.reset(token)


def told_about(folder: Path) -> frozenset[str] | None:
    """The cards this reader was told changed in ``folder``; None: it was told nothing (list it)."""
    told = _TOLD.get()
    return None if told is None else told.get(str(folder))

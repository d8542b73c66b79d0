"""``memory sync``: the user store as a git repository kept in step with ``user_memory_remote``
(DESIGN §16). Placeholder interface; H1 builds it."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.store.stores import MemoryStores

__all__ = ["SyncResult", "sync_user_store"]


@dataclass(frozen=True)
class SyncResult:
    """What one sync did. ``line``: one line for the panel and stderr (what happened, or why it
    failed); ``ok`` False when it failed or was refused (retried later; nothing local is lost)."""

    ok: bool
    line: str
    pulled: tuple[str, ...] = ()  # card filenames that arrived or changed from the remote
    pushed: int = 0  # local commits pushed
    conflicted: tuple[str, ...] = field(default=())  # cards left conflicted by the rebase


def sync_user_store(stores: MemoryStores, remote: str, *, timeout: float = 60.0) -> SyncResult:
    return SyncResult(ok=False, line="memory sync is not built yet")

"""The memory model's client and the memory job manager, each built here and nowhere else.

The runtime (the app and print mode), the worker child and the ``memory`` commands all run
memory jobs; building both pieces in one place keeps their settings (the idle timeout, the
backoff, the consolidation rule) the same on every face.

Importing this module loads the job manager and the memory model's module (not the SDK, which
loads at the first request): a command that only reads the cards imports it only when it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

# The module, not the class: the client's class is looked up when one is built, so a test that
# replaces it (to watch the clients a command makes) sees every one.
from app.agent.memory_bridge import completion as memory_model
from app.agent.model.provider import Usage, retry_base_delay
from memory.constants import MemoryMode
from memory.jobs import pipeline
from memory.jobs.manager import Manager

if TYPE_CHECKING:
    from app.agent.config.settings import Settings
    from memory.extract.completion import Completion
    from memory.search.engine import MemorySearch
    from memory.store.fs import FS
    from memory.store.stores import MemoryStores

__all__ = ["build_manager", "memory_completion"]


def memory_completion(
    settings: Settings,
    *,
    home: Path | None = None,
    on_usage: Callable[[str, Usage], None] | None = None,
    share: Callable[[], Any] | None = None,
) -> memory_model.AnthropicCompletion:
    """The configured memory model (``memory_model``, ``memory_idle_timeout``).

    ``on_usage``: told (model, usage) after each answered request (the app counts it in the
    session's cost); ``share``: the main model's client, whose connection pool it then uses;
    ``home``: where the model's refusals of structured output are remembered."""
    return memory_model.AnthropicCompletion(
        settings.memory_model,
        on_usage=on_usage,
        share=share,
        home=home,
        idle_timeout=settings.memory_idle_timeout,
    )


def build_manager(
    stores: MemoryStores,
    completion: Completion | None,
    settings: Settings | None = None,
    *,
    mode: MemoryMode | None = None,
    fs: FS | None = None,
    search: MemorySearch | None = None,
    runs_jobs: bool = True,
) -> Manager:
    """The memory job manager over ``stores``.

    ``settings``: the consolidation rule (``consolidate_after``, ``consolidate_review``) and the
    mode; without them the manager's own defaults (a command run outside any session: each job
    keeps the mode it was made with). ``mode`` overrides the settings' mode. ``fs``: the
    stores' own unless given. ``runs_jobs`` False: the jobs run in another process (the worker
    child); this manager spools, reviews and watches. A job's retry waits 1 s, 2 s, ... in units
    of the runtime's retry delay, so the retry time a job shows is the one it waits."""
    if mode is None:
        mode = settings.memory_mode if settings is not None else MemoryMode.AUTO
    return Manager(
        stores,
        completion,
        mode=mode,
        fs=fs if fs is not None else stores.fs,
        backoff_base=pipeline.BACKOFF_BASE * retry_base_delay(),
        search=search,
        runs_jobs=runs_jobs,
        **_consolidation(settings),
    )


class _Consolidation(TypedDict, total=False):
    consolidate_after: int
    consolidate_review: bool


def _consolidation(settings: Settings | None) -> _Consolidation:
    """The consolidation rule of ``settings``; none (the manager's defaults) without them."""
    if settings is None:
        return {}
    return {
        "consolidate_after": settings.consolidate_after,
        "consolidate_review": settings.consolidate_review,
    }

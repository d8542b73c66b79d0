"""Starting a background coroutine as a Textual worker, from the flows and hosts the App composes.

The worker gets the coroutine *function*: Textual calls it when the worker starts, so a worker
cancelled before it runs (the app quitting during start-up) leaves no never-awaited coroutine.
``exit_on_error=False``: a failing background job is reported, never a crash of the app.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from textual.worker import Worker

__all__ = ["RunsWorkers", "start"]


class RunsWorkers(Protocol):
    """Textual's ``run_worker`` (an App's, a screen's): what ``start`` needs of a node."""

    def run_worker(
        self,
        work: Callable[[], Coroutine[Any, Any, Any]],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
    ) -> Worker[Any]: ...


def start(
    node: RunsWorkers, work: Callable[[], Coroutine[Any, Any, None]], *, group: str, exclusive: bool = False
) -> Worker[None]:
    worker: Worker[None] = node.run_worker(work, group=group, exclusive=exclusive, exit_on_error=False)
    return worker

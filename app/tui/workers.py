"""Starting a background coroutine as a Textual worker, from the App's helper objects.

The worker gets the coroutine *function*: Textual calls it when the worker starts, so a worker
cancelled before it runs (the app quitting during start-up) leaves no never-awaited coroutine.
``exit_on_error=False``: a failing background job is reported, never a crash of the app.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from textual.dom import DOMNode
from textual.worker import Worker


def start(node: DOMNode, work: Callable[[], Coroutine[Any, Any, None]], *, group: str,
          exclusive: bool = False) -> Worker[None]:
    worker: Worker[None] = node.run_worker(work, group=group, exclusive=exclusive, exit_on_error=False)
    return worker

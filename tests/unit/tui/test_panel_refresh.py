"""app/tui/panel_refresh.py: one panel build at a time; requests meanwhile make exactly one more."""

from __future__ import annotations

import asyncio
from typing import Any

from app.tui.panel_refresh import PanelRefresh


class _App:
    """What PanelRefresh uses of the App: a worker runner, ``built``, the bridge, post_message."""

    def __init__(self) -> None:
        self.built = True
        self._run_start_files = None
        self.bridge = self
        self.posted: list[Any] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.running = 0
        self.most = 0
        self.release = asyncio.Event()

    def run_worker(self, coro: Any, **_: Any) -> None:
        self.tasks.append(asyncio.ensure_future(coro))

    async def panel_state(self, _files: Any) -> tuple[str, int]:
        self.running += 1
        self.most = max(self.most, self.running)
        await self.release.wait()
        self.running -= 1
        return "state", 0

    def post_message(self, message: Any) -> None:
        self.posted.append(message)


async def test_requests_during_a_build_make_one_more_build_never_two_at_once() -> None:
    app = _App()
    refresh = PanelRefresh(app)  # type: ignore[arg-type]
    refresh.request()
    await asyncio.sleep(0)
    for _ in range(5):  # queued, started, applied, … while the first build runs
        refresh.request()
    assert len(app.tasks) == 1 and refresh.running
    app.release.set()
    await asyncio.gather(*app.tasks)
    assert refresh.builds == 2  # the first, and one for all five requests made meanwhile
    assert app.most == 1  # never two builds (each over a second of CPU at 10,000 cards) at once
    assert len(app.posted) == 1 and not refresh.running  # the stale first state is not shown
    refresh.request()  # idle again: a request builds at once
    await asyncio.gather(*app.tasks)
    assert refresh.builds == 3 and len(app.tasks) == 2


async def test_a_failed_build_does_not_stop_later_refreshes() -> None:
    app = _App()
    app.release.set()

    async def broken(_files: Any) -> tuple[str, int]:
        raise OSError("gone")

    app.panel_state = broken  # type: ignore[method-assign]
    refresh = PanelRefresh(app)  # type: ignore[arg-type]
    refresh.request()
    results = await asyncio.gather(*app.tasks, return_exceptions=True)
    assert isinstance(results[0], OSError) and not refresh.running
    del app.panel_state
    refresh.request()
    await asyncio.gather(app.tasks[-1])
    assert len(app.posted) == 1

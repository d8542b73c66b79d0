"""Issue 20 in the App: the frame that first shows a completed answer's last words comes before
the turn's job is spooled and before the side panel shows the queued job (a frame probe on
``App._display``, a spy on the Manager's ``submit``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.fakeapi import FakeAnthropic, Gate, text
from tests.tui.conftest import MEMORY_MODEL, MODEL, send, wait_ready, wait_until

pytestmark = pytest.mark.timeout(90)

END = "ENDMARK0042"


def _answer() -> str:
    return " ".join(f"word{i:03d}" for i in range(80)) + f" {END}"


def _on_screen(app: Any, needle: str) -> bool:
    return any(needle in strip.text for strip in app.screen._compositor.render_strips())


async def test_the_answers_end_is_drawn_before_its_job_is_spooled_and_shown_queued(
    make_app: Callable[..., Any], server: FakeAnthropic
) -> None:
    server.script(MODEL, text(_answer()))
    gate = Gate("memory", timeout=30)  # the job stays queued / in flight while the test looks
    server.script(MEMORY_MODEL, text("[]").held(before=gate))
    app = make_app(server)
    # One entry per frame written to the terminal: (the last words shown, the panel lists a job).
    frames: list[tuple[bool, bool]] = []
    display = app._display

    def probe(screen: Any, update: Any) -> None:
        display(screen, update)
        frames.append((_on_screen(app, END), bool(app.panel.state.jobs)))

    app._display = probe
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        manager = app.bridge.runtime.manager
        spool_dir_had: list[bool] = []
        at_submit: list[int] = []  # frames showing the last words when the job was handed over
        submit = manager.submit

        async def spy(turn: Any) -> Any:
            at_submit.append(sum(1 for shown, _ in frames if shown))
            spool_dir_had.append(bool(manager.spool.ids()))
            return await submit(turn)

        manager.submit = spy
        await send(pilot, "question")
        await wait_until(
            pilot, lambda: app.status_model.info.pending >= 1 or gate.reached, 30, "the job spooled"
        )
        await wait_until(pilot, lambda: any(jobs for _, jobs in frames), 30, "the panel to show the job")
        assert at_submit and at_submit[0] >= 1, "the job was spooled before any frame showed the answer's end"
        assert spool_dir_had == [False]
        first_answer = next(i for i, (shown, _) in enumerate(frames) if shown)
        first_job = next(i for i, (_, jobs) in enumerate(frames) if jobs)
        assert first_answer < first_job, "the queued job was drawn no later than the answer's end"
        gate.release()
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None, 30, "the turn to end")


async def test_the_panels_run_start_read_does_not_hold_the_answers_request(
    make_app: Callable[..., Any], server: FakeAnthropic
) -> None:
    # The cards at the Run's start (the panel marks the ones added after as new) are read beside
    # the Run: a slow store read there is no wait before the answer's request.
    import threading

    server.script(MODEL, text(f"the answer {END}"))
    server.respond(MEMORY_MODEL, lambda body: True, lambda body: text("[]"))
    app = make_app(server)
    release = threading.Event()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        note_files = app.services.index.note_files

        def slow() -> Any:
            release.wait(30)
            return note_files()

        app.services.index.note_files = slow  # type: ignore[method-assign]
        await send(pilot, "question")
        await wait_until(pilot, lambda: _on_screen(app, END), 30, "the answer while the read is held")
        assert app.memory.panel.start_files is None
        release.set()
        await wait_until(pilot, lambda: app.memory.panel.start_files is not None, 30, "the run's start cards")
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None, 30, "the turn to end")

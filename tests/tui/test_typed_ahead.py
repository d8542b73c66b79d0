"""A deciding window takes an answer only once the person has seen it: keys that arrive while it
opens, or before the typing pauses, are not answers; printable ones go back to the prompt they
were typed for, the rest are dropped, and the window says so. The clock is the test's own, so
"0.2 s later" is exact on a loaded machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Static, TextArea

from tests.support.clitools import MODEL
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.conftest import wait_ready, wait_until
from tests.tui.test_widgets_pending import ALL, HELD, Clock, select_job
from tests.tui.test_widgets_pending import Host as PendingHost
from widgets.dialogs import decision
from widgets.dialogs.confirm import ConfirmModal
from widgets.dialogs.decision import QUIET_S, SETTLE_S
from widgets.dialogs.permission import PermissionAnswer, PermissionModal, PermissionRequest
from widgets.dialogs.trust_modal import TrustCard, TrustModal
from widgets.pending.screen import PendingScreen

pytestmark = [pytest.mark.typed_ahead, pytest.mark.timeout(60)]

_UNSET = object()
BASH = PermissionRequest(
    call_id="c1", name="bash", summary="run a command", preview="touch pwned", preview_kind="command"
)
CARDS = [TrustCard(type="project_knowledge", title="Build with make", summary="make build", filename="p.md")]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(decision, "clock", fake)
    return fake


class Host(App[None]):
    """A chat-like screen with a prompt under the window, and the App's side of the rule."""

    def __init__(self, modal: Screen[Any], *, prompt_under: bool = True) -> None:
        super().__init__()
        self.modal = modal
        self.result: object = _UNSET
        self.prompt_under = prompt_under
        self.last_key_at = float("-inf")

    def compose(self) -> ComposeResult:
        yield TextArea(id="prompt")

    def take_typed_ahead(self, text: str, backspaces: int) -> bool:
        if not self.prompt_under:
            return False
        prompt = self.query_one("#prompt", TextArea)
        for _ in range(backspaces):
            prompt.action_delete_left()
        prompt.insert(text)
        return True

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            self.last_key_at = decision.clock()
        await super().on_event(event)

    def open(self) -> None:
        self.push_screen(self.modal, self._done)

    def _done(self, result: object) -> None:
        self.result = result


def prompt_text(app: App[Any]) -> str:
    return app.query_one("#prompt", TextArea).text


def note_text(modal: Screen[Any]) -> str:
    line = modal.query_one("#typed-ahead", Static)
    return str(line.render()) if line.display else ""


async def opened(pilot: Pilot[Any], app: Host) -> None:
    app.open()
    await wait_until(
        pilot,
        lambda: app.screen is app.modal and app.modal._gate_shown_at is not None,
        what="the window drawn",
    )


async def test_a_key_typed_as_the_permission_window_opens_goes_to_the_prompt_not_the_answer(
    clock: FakeClock,
) -> None:
    app = Host(PermissionModal(BASH))
    async with app.run_test() as pilot:
        await opened(pilot, app)
        await pilot.press("y")  # as it opens: typed for the prompt
        assert app.result is _UNSET and app.screen is app.modal
        clock.advance(0.2)
        await pilot.press("a", "y")  # still typing: "a" would allow bash for the session
        assert app.result is _UNSET and prompt_text(app) == "yay"
        assert "3 keys went back to the prompt" in note_text(app.modal)
        clock.advance(QUIET_S)  # the typing paused and the window was seen
        await pilot.press("y")
        await wait_until(pilot, lambda: app.result == PermissionAnswer("once"))
        assert prompt_text(app) == "yay"


async def test_typing_on_keeps_the_window_from_taking_answers_until_it_pauses(clock: FakeClock) -> None:
    app = Host(PermissionModal(BASH))
    async with app.run_test() as pilot:
        await opened(pilot, app)
        # The person types at human speed across the window's opening and on.
        for ch in "yes yes yes":
            await pilot.press(ch if ch != " " else "space")
            clock.advance(0.15)
        await pilot.press("backspace")  # a correction reaches the prompt as one
        assert app.result is _UNSET and prompt_text(app) == "yes yes ye"
        clock.advance(QUIET_S - 0.01)
        await pilot.press("n")  # 0.49 s after the last key: still typing
        assert app.result is _UNSET and prompt_text(app) == "yes yes yen"
        clock.advance(QUIET_S)
        await pilot.press("n")
        await wait_until(pilot, lambda: app.result == PermissionAnswer("deny"))


async def test_a_key_right_after_the_window_is_drawn_is_not_an_answer_even_after_a_pause(
    clock: FakeClock,
) -> None:
    app = Host(ConfirmModal("Delete?", "the card goes to .trash/"))
    async with app.run_test() as pilot:
        await opened(pilot, app)
        clock.advance(SETTLE_S - 0.05)  # no key for long before, but the window is barely up
        await pilot.press("y")
        assert app.result is _UNSET
        clock.advance(QUIET_S)
        await pilot.press("y")
        await wait_until(pilot, lambda: app.result is True)


async def test_a_key_typed_just_before_the_window_opened_counts_as_typing(clock: FakeClock) -> None:
    app = Host(ConfirmModal("Delete?", "the card goes to .trash/"))
    async with app.run_test() as pilot:
        app.query_one("#prompt").focus()
        await pilot.press("x")  # typed into the prompt ...
        assert prompt_text(app) == "x"
        clock.advance(0.1)  # ... and the window opened 0.1 s later
        await opened(pilot, app)
        clock.advance(SETTLE_S)  # drawn 0.3 s ago, but the prompt's key was only 0.4 s ago:
        await pilot.press("y")  # the typing had not paused, so this is not an answer
        assert app.result is _UNSET and prompt_text(app) == "xy"


async def test_keys_over_a_screen_without_the_prompt_are_dropped_and_said(clock: FakeClock) -> None:
    app = Host(ConfirmModal("Discard your edit?", "your text is dropped"), prompt_under=False)
    async with app.run_test() as pilot:
        await opened(pilot, app)
        await pilot.press("y", "enter", "escape")
        assert app.result is _UNSET and prompt_text(app) == ""
        assert "3 keys dropped" in note_text(app.modal)
        clock.advance(QUIET_S)
        await pilot.press("n")
        await wait_until(pilot, lambda: app.result is False)


async def test_a_click_answers_at_once(clock: FakeClock) -> None:
    app = Host(ConfirmModal("Delete?", "the card goes to .trash/"))
    async with app.run_test() as pilot:
        await opened(pilot, app)
        await pilot.click("#no")  # a click is deliberate
        await wait_until(pilot, lambda: app.result is False)


async def test_the_trust_window_takes_no_answer_while_it_reads_the_cards(clock: FakeClock) -> None:
    modal = TrustModal(None, where="/src/clone")
    app = Host(modal)
    async with app.run_test() as pilot:
        await opened(pilot, app)
        clock.advance(5)  # a 10,000-card store takes seconds to read
        for ch in "not now":
            await pilot.press(ch if ch != " " else "space")
        assert app.result is _UNSET and prompt_text(app) == "not now"  # "n" did not answer, nothing lost
        clock.advance(5)
        modal.show_cards(CARDS)
        await wait_until(pilot, lambda: modal._gate_shown_at is not None, what="the cards drawn")
        await pilot.press("y")  # the list just appeared: not seen yet
        assert app.result is _UNSET and prompt_text(app) == "not nowy"
        clock.advance(QUIET_S)
        await pilot.press("y")
        await wait_until(pilot, lambda: app.result is True)


async def test_the_pending_screen_approves_only_on_purpose(clock: FakeClock) -> None:
    app = PendingHost(PendingScreen(ALL, clock=Clock()))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.screen is app.pending and app.pending._gate_shown_at is not None)
        await select_job(pilot, app.pending, HELD.id)  # moving the selection works at once
        await pilot.press("a")  # typed as the screen opened
        await pilot.pause()
        assert not any(isinstance(m, PendingScreen.Approve) for m in app.posted)
        clock.advance(QUIET_S)
        await pilot.press("a")
        await wait_until(pilot, lambda: any(isinstance(m, PendingScreen.Approve) for m in app.posted))


# -- the real app ------------------------------------------------------------------------------


async def test_in_the_app_a_y_typed_as_the_permission_window_opens_runs_nothing(
    make_app: Any, server: FakeAnthropic, ws: Path, clock: FakeClock
) -> None:
    server.script(MODEL, tool_use("bash", {"command": "touch pwned"}, id="toolu_1"), text("done"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        app.prompt.text = "tidy up"
        assert app.prompt.submit()
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the permission window")
        await wait_until(pilot, lambda: app.screen._gate_shown_at is not None)
        await pilot.press("y", "a", "y")
        assert isinstance(app.screen, PermissionModal)
        assert not (ws / "pwned").exists()
        assert app.prompt.text == "yay"  # what was typed is in the prompt, nothing lost
        clock.advance(QUIET_S)
        await pilot.press("n")
        await wait_until(pilot, lambda: len(server.requests_for(MODEL)) == 2, what="the denial sent")
        assert not (ws / "pwned").exists()
        await wait_until(pilot, lambda: app.focused is app.prompt and app.prompt.text == "yay")


async def test_a_burst_typed_on_the_panel_reaches_the_prompt_whole(
    make_app: Any,
    server: FakeAnthropic,
) -> None:
    from widgets.panel.memory_panel import MemoryPanel

    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot)
        app.prompt.insert("x")  # Tab on an empty prompt turns thinking on: with a draft it moves on
        await pilot.press("tab")
        panel = app.query_one(MemoryPanel)
        await wait_until(
            pilot,
            lambda: app.focused is not None and panel in app.focused.ancestors_with_self,
            what="the panel focused",
        )
        # One write of many keys, as a terminal delivers a fast typist or tmux's send-keys: the
        # keys are all queued before the first is handled.
        for ch in "hello world":
            app.post_message(events.Key(ch if ch != " " else "space", ch))
        await wait_until(
            pilot, lambda: app.prompt.text == "xhello world", what="the whole burst in the prompt"
        )

"""The permission and trust modals in a tiny host App: every contract key, and what they show."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.content import Content
from textual.widgets import Button, Input, Static

from tests.tui.conftest import wait_until
from widgets.dialogs.frame import render_preview
from widgets.dialogs.permission import (
    NOTE_MAX_CHARS,
    PermissionAnswer,
    PermissionModal,
    PermissionRequest,
    clean_note,
)
from widgets.dialogs.trust_modal import TrustCard, TrustModal

_UNSET = object()


class ModalHost(App[None]):
    def __init__(self, modal: PermissionModal | TrustModal) -> None:
        super().__init__()
        self.modal = modal
        self.result: object = _UNSET

    def compose(self) -> ComposeResult:
        yield Static("behind the modal")

    def on_mount(self) -> None:
        self.push_screen(self.modal, self._done)

    def _done(self, result: object) -> None:
        self.result = result


EDIT = PermissionRequest(
    call_id="c1",
    name="edit_file",
    summary="edit app/main.py (1 replacement)",
    preview="--- a/app/main.py\n+++ b/app/main.py\n@@ -1,2 +1,2 @@\n-print('old')\n+print('new')\n keep",
    preview_kind="diff",
)
BASH = PermissionRequest(
    call_id="c2", name="bash", summary="run a command", preview="rm -rf build", preview_kind="command"
)
CARDS = [
    TrustCard(
        type="project", title="Build with make", summary="make build, not npm", filename="project_build.md"
    ),
    TrustCard(
        type="feedback", title="Run \x1b[31mall\x1b[0m tests", summary="", filename="feedback_tests.md"
    ),
]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("1", "once"),
        ("y", "once"),
        ("2", "session"),
        ("a", "session"),
        ("3", "deny"),
        ("n", "deny"),
        ("escape", "deny"),
    ],
)
async def test_permission_modal_key_dismisses_with_its_choice(key: str, expected: str) -> None:
    app = ModalHost(PermissionModal(BASH))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.press(key)
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result == PermissionAnswer(expected)


async def test_permission_modal_enter_alone_allows_nothing() -> None:
    app = ModalHost(PermissionModal(BASH))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.press("enter", "space", "x")
        await pilot.pause()
        assert app.result is _UNSET
        assert app.screen is app.modal


async def test_permission_modal_buttons_answer_for_mouse_users() -> None:
    app = ModalHost(PermissionModal(EDIT))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.click("#session")
        await wait_until(pilot, lambda: app.result == PermissionAnswer("session"))


async def test_permission_modal_shows_the_tool_summary_and_the_diff_coloured() -> None:
    app = ModalHost(PermissionModal(EDIT))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        modal = app.modal
        assert modal.query_one("#dialog").border_title == "Allow edit_file?"
        shown = modal.query_one("#preview-text", Static).content
        assert "+print('new')" in shown.plain  # type: ignore[union-attr]
        assert modal.query_one("#session", Button).label.plain == "Allow for this session [2/a]"
        # At 80×24 the whole dialog fits on screen.
        dialog = modal.query_one("#dialog")
        assert dialog.region.bottom <= 24 and dialog.region.right <= 80


def test_diff_preview_colours_added_and_removed_lines() -> None:
    content = render_preview(EDIT.preview, "diff")
    styles = {content.plain[span.start : span.end].strip(): str(span.style) for span in content.spans}
    assert styles["+print('new')"] == "$text-success"
    assert styles["-print('old')"] == "$text-error"
    assert styles["@@ -1,2 +1,2 @@"] == "$text-accent"


def test_command_preview_is_shown_after_a_prompt_sign() -> None:
    assert render_preview("make test\n  --verbose", "command").plain == "$ make test\n    --verbose"


def test_preview_is_sanitized_and_bounded() -> None:
    hostile = "\x1b]52;c;Y2xpcGJvYXJk\x07ok\n" + "\n".join(str(i) for i in range(1000))
    plain = render_preview(hostile, "text").plain
    assert "\x1b" not in plain and "Y2xpcGJvYXJk" not in plain
    assert plain.startswith("ok\n")
    assert plain.endswith("601 more lines not shown")


@pytest.mark.parametrize(("key", "expected"), [("y", True), ("n", False), ("escape", False)])
async def test_trust_modal_key_dismisses_with_its_answer(key: str, expected: bool) -> None:
    app = ModalHost(TrustModal(CARDS))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.press(key)
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result is expected


async def test_trust_modal_lists_every_card_sanitized() -> None:
    app = ModalHost(TrustModal(CARDS, where="~/src/cloned"))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        listing = app.modal.query_one("#cards", Static).content.plain  # type: ignore[union-attr]
        assert listing == (
            "[project] Build with make\n  make build, not npm · project_build.md\n\n"
            "[feedback] Run all tests\n  feedback_tests.md"
        )
        summary = app.modal.query_one("#summary", Static).content.plain  # type: ignore[union-attr]
        assert "~/src/cloned" in summary and "2 cards are not put into any prompt" in summary
        await pilot.press("enter")  # Enter alone does not trust
        await pilot.pause()
        assert app.result is _UNSET


async def test_permission_modal_shows_a_hostile_tool_name_literally() -> None:
    request = PermissionRequest(
        call_id="c3", name="[b]bash\x1b[2J", summary="[red]x[/red]", preview="", preview_kind="text"
    )
    app = ModalHost(PermissionModal(request))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        title = app.modal.query_one("#dialog").border_title  # returned as markup
        assert Content.from_markup(title or "").plain == "Allow [b]bash?"
        summary = app.modal.query_one("#summary", Static).content
        assert summary.plain == "[red]x[/red]"  # type: ignore[union-attr]


async def test_permission_modal_tab_reaches_the_note_and_enter_denies_with_it() -> None:
    app = ModalHost(PermissionModal(BASH))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.press("tab")
        note = app.modal.query_one("#note", Input)
        assert app.modal.focused is note
        # The answer keys type into the note box instead of answering.
        await pilot.press(*"1y2a3n not here")
        assert app.result is _UNSET and note.value == "1y2a3n not here"
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result == PermissionAnswer("deny", "1y2a3n not here")


async def test_permission_modal_escape_in_the_note_box_denies_without_the_note() -> None:
    app = ModalHost(PermissionModal(BASH))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.press("tab", *"typo")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result == PermissionAnswer("deny")


async def test_permission_modal_enter_in_an_empty_note_box_denies_and_never_allows() -> None:
    app = ModalHost(PermissionModal(BASH))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.press("tab", "enter")
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result == PermissionAnswer("deny")


async def test_permission_modal_note_box_cleans_a_pasted_hostile_note() -> None:
    app = ModalHost(PermissionModal(BASH))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.screen is app.modal)
        await pilot.press("tab")
        note = app.modal.query_one("#note", Input)
        note.value = "use \x1b[31mmake\x1b[0m\u202e here\x07"
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result == PermissionAnswer("deny", "use make here")


def test_clean_note_is_one_bounded_line_without_control_characters() -> None:
    assert clean_note("line one\nline two\r\n\tthree\u2028four") == "line one line two three four"
    assert clean_note("\x1b]52;c;aGFja2Vk\x07ok\x00\x9b31m") == "ok"
    assert clean_note("   ") == ""
    long = clean_note("word " * 200)
    assert len(long) == NOTE_MAX_CHARS and long.endswith("…") and "\n" not in long

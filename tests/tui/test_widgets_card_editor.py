"""The card editor screen and the conflict modal in a tiny host App: prefill, edits, the Save
message, errors, cancel with and without changes, load(), both layouts, hostile text."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Input, Label, Select, Static, TextArea

from tests.tui.conftest import wait_until
from widgets.cards.conflict import ConflictModal
from widgets.cards.draft import CardDraft
from widgets.cards.edit_problem import EditProblemModal
from widgets.cards.editor import CardEditor
from widgets.dialogs.confirm import ConfirmModal

_UNSET = object()

DRAFT = CardDraft(
    level="project",
    type="project_knowledge",
    title="Build with make",
    summary="make build, not npm",
    body="Run `make build`.\n\tNever npm.\n",
)
DISK = CardDraft(
    level="project",
    type="project_knowledge",
    title="Build with ninja",
    summary="ninja, since March",
    body="Run `ninja`.\n",
)


class Host(App[None]):
    def __init__(self, screen: CardEditor | ConflictModal | EditProblemModal) -> None:
        super().__init__()
        self.pushed = screen
        self.result: object = _UNSET
        self.saves: list[CardEditor.Save] = []

    def compose(self) -> ComposeResult:
        yield Static("behind the editor")

    def on_mount(self) -> None:
        self.push_screen(self.pushed, self._done)

    def _done(self, result: object) -> None:
        self.result = result

    def on_card_editor_save(self, message: CardEditor.Save) -> None:
        self.saves.append(message)


def editor(draft: CardDraft = DRAFT, **kwargs: object) -> CardEditor:
    kwargs.setdefault("filename", "project_knowledge_build.md")
    kwargs.setdefault("sha256", "f00d")
    return CardEditor(draft, **kwargs)  # type: ignore[arg-type]


def lines(app: App[None]) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def status(ed: CardEditor) -> str:
    return str(ed.query_one("#status", Label).content)


async def pick_next_option(pilot: Pilot[None], ed: CardEditor, selector: str) -> None:
    """With the Select focused: open its dropdown, move down one option, take it."""
    select = ed.query_one(selector, Select)
    await wait_until(pilot, lambda: ed.focused is select, what=f"{selector} focused")
    before = select.value
    await pilot.press("enter")
    await wait_until(pilot, lambda: select.expanded, what=f"{selector} open")
    await pilot.press("down", "enter")
    await wait_until(
        pilot, lambda: not select.expanded and select.value != before, what=f"{selector} changed"
    )


async def test_fields_are_prefilled_and_edits_make_the_draft_dirty() -> None:
    ed = editor()
    app = Host(ed)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.screen is ed and ed.focused is ed.query_one("#title"))
        assert ed.query_one("#title", Input).value == "Build with make"
        assert ed.query_one("#summary", Input).value == "make build, not npm"
        assert ed.query_one("#type", Select).value == "project_knowledge"
        assert ed.query_one("#level", Select).value == "project"
        assert ed.query_one("#body", TextArea).text == DRAFT.body
        assert ed.draft() == DRAFT and not ed.dirty and status(ed) == ""
        assert "Edit project/project_knowledge_build.md" in lines(app)[0]

        await pilot.press("end", *" now")
        await pilot.press("tab", "ctrl+u", *"fast")  # ctrl+u: delete to the line start
        await pilot.press("tab")
        await pick_next_option(pilot, ed, "#type")
        assert ed.query_one("#type", Select).value == "reference_material"
        await pilot.press("tab")
        await pick_next_option(pilot, ed, "#level")
        assert ed.query_one("#level", Select).value == "user"
        await pilot.press("tab")
        await wait_until(pilot, lambda: ed.focused is ed.query_one("#cites"), what="the citations focused")
        await pilot.press("tab")
        await wait_until(pilot, lambda: ed.focused is ed.query_one("#pinned"), what="the Pinned box focused")
        await pilot.press("tab")
        await wait_until(pilot, lambda: ed.focused is ed.query_one("#body"), what="the body focused")
        await pilot.press(*"ok ")
        await wait_until(pilot, lambda: ed.query_one("#body", TextArea).text.startswith("ok "))
        assert ed.draft() == CardDraft(
            level="user",
            type="reference_material",
            title="Build with make now",
            summary="fast",
            body="ok " + DRAFT.body,
        )
        assert ed.dirty
        await wait_until(pilot, lambda: status(ed) == "unsaved changes")
        assert any("unsaved changes" in line for line in lines(app))


async def test_the_editor_opens_with_the_cursor_after_the_title_and_a_typed_key_adds_to_it() -> None:
    ed = editor()
    app = Host(ed)
    async with app.run_test(size=(100, 30)) as pilot:
        title = ed.query_one("#title", Input)
        await wait_until(pilot, lambda: app.screen is ed and ed.focused is title)
        await pilot.press("s")
        await wait_until(pilot, lambda: title.value != DRAFT.title)
        assert title.value == DRAFT.title + "s"  # not "s": nothing was selected
        assert title.selection.is_empty and title.cursor_position == len(title.value)
        # Tab to the next field does not select it either: a key typed there adds to it too.
        await pilot.press("tab", "!")
        summary = ed.query_one("#summary", Input)
        await wait_until(pilot, lambda: summary.value != DRAFT.summary)
        assert summary.value == DRAFT.summary + "!"


@pytest.mark.parametrize("field", ["#title", "#body"])
async def test_ctrl_s_posts_save_from_any_field(field: str) -> None:
    ed = editor()
    app = Host(ed)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is ed)
        ed.query_one(field).focus()
        await pilot.press("x", "ctrl+s")
        await wait_until(pilot, lambda: len(app.saves) == 1, what="a Save message")
        save = app.saves[0]
        assert save.editor is ed
        assert save.filename == "project_knowledge_build.md"
        assert save.sha256 == "f00d"
        assert save.original_level == "project"
        assert save.draft == ed.draft() and save.draft != DRAFT  # the typed "x" is in it
        assert app.screen is ed  # the App decides when the editor goes


async def test_no_second_save_while_saving_and_a_new_card_has_no_identity() -> None:
    ed = CardEditor(DRAFT)
    app = Host(ed)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is ed)
        assert "New card" in lines(app)[0]
        ed.set_saving(True)
        await wait_until(pilot, lambda: any("saving…" in line for line in lines(app)), what="saving…")
        await pilot.press("ctrl+s")
        ed.set_saving(False)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: len(app.saves) >= 1)
        assert len(app.saves) == 1  # the press while saving posted nothing
        assert (app.saves[0].filename, app.saves[0].sha256, app.saves[0].original_level) == (None, None, None)


async def test_errors_show_under_their_field_and_focus_it_then_clear() -> None:
    ed = editor()
    app = Host(ed)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is ed)
        ed.query_one("#body").focus()
        ed.set_saving(True)
        ed.show_errors({"body": "too long", "title": "a title is needed"}, general="not saved: 2 problems")
        await wait_until(pilot, lambda: ed.focused is ed.query_one("#title"), what="the title focused")
        assert not ed.saving
        await wait_until(pilot, lambda: "not saved: 2 problems" in lines(app)[1], what="the general error")
        shown = lines(app)
        title_row = next(i for i, line in enumerate(shown) if "Build with make" in line)
        assert "a title is needed" in shown[title_row + 1]
        assert any("too long" in line for line in shown)
        ed.show_errors({})
        # The general line is hidden again: no gap above the title.
        await wait_until(pilot, lambda: "Title" in lines(app)[1], what="the errors cleared")
        shown = lines(app)
        assert not any(
            "too long" in line or "2 problems" in line or "title is needed" in line for line in shown
        )


async def test_esc_when_clean_dismisses_with_none() -> None:
    ed = editor()
    app = Host(ed)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is ed)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.result is None, what="the editor dismissed")


async def test_esc_when_dirty_asks_n_keeps_editing_y_discards() -> None:
    ed = editor()
    app = Host(ed)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is ed)
        ed.query_one("#body").focus()
        await pilot.press("z", "escape")  # Esc in the body still means cancel
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the confirm modal")
        assert any("Discard your changes?" in line for line in lines(app))
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is ed and ed.focused is ed.query_one("#body"))
        assert app.result is _UNSET
        assert ed.query_one("#body", TextArea).text.startswith("z") and ed.dirty
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await wait_until(pilot, lambda: app.result is None, what="the editor dismissed")
        assert app.screen is not ed


async def test_esc_with_a_select_open_only_closes_the_dropdown() -> None:
    ed = editor()
    app = Host(ed)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is ed)
        select = ed.query_one("#type", Select)
        select.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: select.expanded, what="the dropdown open")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not select.expanded, what="the dropdown closed")
        assert app.screen is ed and app.result is _UNSET


async def test_load_replaces_every_field_and_is_clean() -> None:
    ed = editor()
    app = Host(ed)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is ed)
        await pilot.press(*"edit")
        ed.show_errors({"title": "bad"})
        await wait_until(pilot, lambda: ed.dirty and status(ed) == "unsaved changes")
        ed.load(DISK, sha256="beef")
        assert ed.draft() == DISK and not ed.dirty
        assert ed.sha256 == "beef" and ed.filename == "project_knowledge_build.md"
        await wait_until(pilot, lambda: status(ed) == "")
        assert not any("bad" in line for line in lines(app))
        assert any("Build with ninja" in line for line in lines(app))
        # A broken card (no type) shows no choice, and taking a typed one back restores it.
        ed.load(CardDraft("user", "", "t", "s", "b"), sha256=None, filename="x.md")
        assert ed.query_one("#type", Select).is_blank() and ed.draft().type == ""
        assert ed.original_level == "user" and not ed.dirty
        ed.load(DISK, sha256="beef")
        assert ed.draft() == DISK


async def test_mark_saved_makes_the_editor_clean_again() -> None:
    ed = CardEditor(DRAFT)
    app = Host(ed)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is ed)
        await pilot.press(*"new ")
        await wait_until(pilot, lambda: ed.dirty)
        ed.set_saving(True)
        ed.mark_saved(filename="project_knowledge_new.md", sha256="cafe", level="project")
        assert not ed.dirty and not ed.saving
        await wait_until(pilot, lambda: "Edit project/project_knowledge_new.md" in lines(app)[0])
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: len(app.saves) == 1)
        assert (app.saves[0].filename, app.saves[0].sha256, app.saves[0].original_level) == (
            "project_knowledge_new.md",
            "cafe",
            "project",
        )


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_every_field_and_the_key_hints_fit(size: tuple[int, int]) -> None:
    ed = editor()
    app = Host(ed)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.screen is ed)
        await pilot.pause()
        shown = lines(app)
        assert len(shown) == size[1]
        text = "\n".join(shown)
        for expected in (
            "Title",
            "Summary",
            "Type",
            "Level",
            "Body",
            "project_knowledge",
            "make build, not npm",
        ):
            assert expected in text, expected
        assert "Build with make" in shown[1]
        assert "Run `make build`." in text and "Never npm." in text
        assert "Ctrl+S save · Ctrl+T still true · Esc cancel · Tab next field" in shown[-1]
        body = ed.query_one("#body")
        assert body.region.height >= 5 and body.region.bottom < size[1]
        type_row = next(line for line in shown if "Type" in line)
        # Wide: Type and Level share a row; narrow: stacked.
        assert ("Level" in type_row) is (size[0] >= 100)


async def test_hostile_title_shows_literally_without_the_escape() -> None:
    draft = CardDraft("project", "bogus", "[bold]x\x1b[31m", "a\x1b]0;pwned\x07b", "line1\x1b[2J\n\tline2")
    ed = editor(draft)
    app = Host(ed)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen is ed)
        await pilot.pause()
        assert ed.draft() == CardDraft("project", "", "[bold]x", "ab", "line1\n\tline2")
        assert not ed.dirty  # what was cleaned on the way in is not a change
        shown = lines(app)
        assert "[bold]x" in shown[1] and "\x1b" not in "".join(shown)
        assert ed.query_one("#type", Select).is_blank()


def conflict_host(disk: CardDraft | None, where: str = "project/project_knowledge_build.md") -> Host:
    return Host(ConflictModal(DRAFT, disk, where=where))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_conflict_modal_shows_both_versions(size: tuple[int, int]) -> None:
    app = conflict_host(DISK)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ConflictModal))
        await pilot.pause()
        modal = app.screen
        text = "\n".join(lines(app))
        assert "This card changed on disk since you opened it" in text
        assert "project/project_knowledge_build.md" in text
        assert "Build with make" in text and "Build with ninja" in text
        assert "Keep yours [k]" in text and "Take the disk's [t]" in text and "Cancel [c/Esc]" in text
        mine = str(modal.query_one("#mine-text", Static).content)
        disk = str(modal.query_one("#disk-text", Static).content)
        assert "make build, not npm" in mine and "Never npm." in mine
        assert "ninja, since March" in disk and "Run `ninja`." in disk
        wide = modal.query_one("#mine-pane").region.y == modal.query_one("#disk-pane").region.y
        assert wide is (size[0] >= 100)


@pytest.mark.parametrize(
    ("key", "expected"), [("k", "mine"), ("t", "disk"), ("c", "cancel"), ("escape", "cancel")]
)
async def test_conflict_modal_keys(key: str, expected: str) -> None:
    app = conflict_host(DISK)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ConflictModal))
        await pilot.press("enter")  # Enter alone decides nothing
        await pilot.press(key)
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result == expected


async def test_conflict_modal_when_deleted_on_disk() -> None:
    app = conflict_host(None, where="user/\x1b[31mred.md")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ConflictModal))
        await pilot.pause()
        text = "\n".join(lines(app))
        assert "deleted on disk since you opened it" in text
        assert "Drop yours (keep it deleted) [t]" in text
        assert "user/red.md" in text
        await pilot.press("t")
        await wait_until(pilot, lambda: app.result == "disk")


# -- an $EDITOR result that cannot be applied ----------------------------------------------


def problem_host(text: str = "---\ntitle: [unclosed\n---\nmy words\n") -> Host:
    return Host(
        EditProblemModal(
            "front matter is not valid YAML at line 2", text, where="project/project_knowledge_build.md"
        )
    )


@pytest.mark.parametrize("size", [(80, 24), (140, 40)])
async def test_edit_problem_modal_shows_the_problem_and_the_persons_text(size: tuple[int, int]) -> None:
    app = problem_host()
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, EditProblemModal))
        await pilot.pause()
        text = "\n".join(lines(app))
        assert "Your edit was not applied" in text and "not valid YAML at line 2" in text
        assert "project/project_knowledge_build.md is unchanged" in text and "my words" in text
        assert "Edit again [e]" in text and "Discard [d]" in text


@pytest.mark.parametrize(("key", "expected"), [("e", "edit"), ("d", "discard")])
async def test_edit_problem_modal_keys(key: str, expected: str) -> None:
    app = problem_host()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, EditProblemModal))
        await pilot.press("enter")  # Enter alone decides nothing
        await pilot.press(key)
        await wait_until(pilot, lambda: app.result is not _UNSET)
        assert app.result == expected


async def test_edit_problem_modal_esc_asks_before_dropping_the_text() -> None:
    app = problem_host()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, EditProblemModal))
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="asked first")
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, EditProblemModal), what="kept")
        assert app.result is _UNSET
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await wait_until(pilot, lambda: app.result == "discard")


async def test_edit_problem_modal_shows_hostile_text_literally_and_an_unreadable_copy_as_such() -> None:
    app = problem_host("\x1b[31m[bold]red[/bold]\n")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, EditProblemModal))
        await pilot.pause()
        assert "[bold]red[/bold]" in "\n".join(lines(app))
    app = problem_host("")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, EditProblemModal))
        await pilot.pause()
        assert "(nothing could be read)" in "\n".join(lines(app))

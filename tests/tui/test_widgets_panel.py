"""The memory side panel and the status line as drawn (widgets/panel/memory_panel.py,
widgets/chat/status.py)."""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import App, ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Static

from tests.tui.conftest import wait_until
from widgets.chat.status import StatusInfo, StatusLine, shorten_left
from widgets.panel.memory_panel import MemoryPanel, PanelCard, PanelJob, PanelState, wrap_cells

LONG_SUMMARY = (
    "Run make build before the tests; the test target does not rebuild the generated parsers and "
    "a stale parser gives confusing failures in the integration suite"
)


def _state(**kw: object) -> PanelState:
    base: dict[str, object] = {
        "project": (
            PanelCard(
                "project_knowledge", "Build before testing", LONG_SUMMARY, "project_knowledge_build.md"
            ),
            PanelCard(
                "reference_material",
                "CI dashboard",
                "grafana board ci-main",
                "reference_material_ci.md",
                new=True,
            ),
        ),
        "user": (PanelCard("user_preference", "Answers in English", "even when asked in French", "u.md"),),
        "cut_note": None,
        "project_note": None,
        "jobs": (),
    }
    base.update(kw)
    return PanelState(**base)  # type: ignore[arg-type]


class PanelApp(App[None]):
    CSS = "#main { height: 1fr; } #chat { width: 1fr; }"

    def __init__(self) -> None:
        super().__init__()
        self.opened = 0

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield Static("chat", id="chat")
            yield MemoryPanel(id="panel")
        yield StatusLine(id="status")

    def on_memory_panel_open_pending(self, message: MemoryPanel.OpenPending) -> None:
        self.opened += 1


def screen_lines(app: App[None]) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def panel_lines(app: App[None]) -> list[str]:
    panel = app.query_one(MemoryPanel)
    x0, width = panel.content_region.x, panel.content_region.width
    return [line[x0 : x0 + width] for line in screen_lines(app)]


async def test_the_panel_shows_both_sections_compactly_at_80x24() -> None:
    app = PanelApp()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(MemoryPanel)
        panel.show(_state())
        await wait_until(pilot, lambda: any("Answers in English" in line for line in panel_lines(app)))
        lines = panel_lines(app)
        text = "\n".join(lines)
        assert panel.region.width == 32 and panel.content_region.width == 30
        assert "Project 2 · 1 new" in text and "User 1" in text
        assert "know Build before testing" in text and "pref Answers in English" in text
        assert "new ref CI dashboard" in text
        # The long summary takes two lines and ends in an ellipsis, never a third line.
        i = next(k for k, line in enumerate(lines) if "Build before testing" in line)
        assert lines[i + 1].strip().startswith("Run make build")
        assert lines[i + 2].rstrip().endswith("…")
        assert "CI dashboard" in lines[i + 3]
        # The chat column keeps the rest of the width.
        assert app.query_one("#chat").region.width == 80 - 32


async def test_the_panel_says_when_the_index_is_cut_and_when_the_project_store_is_untrusted() -> None:
    app = PanelApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(MemoryPanel)
        panel.show(
            _state(
                cut_note="index cut: 12 notes not shown",
                project_note="untrusted — not used until you trust it",
            )
        )
        await wait_until(pilot, lambda: "index cut: 12 notes not shown" in "\n".join(panel_lines(app)))
        text = "\n".join(panel_lines(app))
        assert "untrusted — not used until" in text
        panel.show(_state(project=(), user=(), project_note=None))
        await wait_until(pilot, lambda: "no notes yet" in "\n".join(panel_lines(app)))
        assert "index cut" not in "\n".join(panel_lines(app))


async def test_card_text_is_shown_without_terminal_control_sequences() -> None:
    app = PanelApp()
    hostile = PanelCard(
        "project_knowledge", "Evil\x1b[2J\x1b]0;owned\x07 title", "sum\x1b[31mred\u202e", "e.md"
    )
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(MemoryPanel)
        panel.show(_state(project=(hostile,)))
        await wait_until(pilot, lambda: "sumred" in "\n".join(panel_lines(app)))
        assert "Evil title" in "\n".join(panel_lines(app))
        rendered = panel._cards.render().plain  # what the widget hands to Textual, before any filtering
        assert "\x1b" not in rendered and "\x07" not in rendered and "\u202e" not in rendered


async def test_the_jobs_line_shows_each_job_and_opens_pending_on_click_and_enter() -> None:
    app = PanelApp()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(MemoryPanel)
        panel.show(_state())
        await pilot.pause()
        assert panel._jobs.display is False  # no jobs: no line
        jobs = (
            PanelJob("a", "extracting · fix the login bug"),
            PanelJob("b", "retrying 2/3 in 4s"),
            PanelJob("c", "failed: extraction request failed: 401 unauthorized", failed=True),
        )
        panel.show(_state(jobs=jobs))
        await wait_until(pilot, lambda: "retrying 2/3 in 4s" in "\n".join(panel_lines(app)))
        text = "\n".join(panel_lines(app))
        assert "• extracting · fix the login" in text and "✗ failed: extraction" in text
        await pilot.click(panel._jobs)
        await wait_until(pilot, lambda: app.opened == 1)
        panel._jobs.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.opened == 2)


async def test_the_panel_reflows_its_cards_when_it_gets_wider() -> None:
    app = PanelApp()
    async with app.run_test(size=(160, 30)) as pilot:
        panel = app.query_one(MemoryPanel)
        panel.styles.width = 100
        panel.show(_state())
        await wait_until(pilot, lambda: "Answers in English" in "\n".join(panel_lines(app)))
        lines = panel_lines(app)
        i = next(k for k, line in enumerate(lines) if "Build before testing" in line)
        # 100 columns hold the whole summary in two lines: no ellipsis.
        assert "…" not in lines[i + 1] + lines[i + 2]
        assert "integration suite" in lines[i + 2]


async def test_the_index_cut_note_is_visible_under_the_header_without_scrolling() -> None:
    app = PanelApp()
    many = tuple(PanelCard("project_knowledge", f"Fact {i}", LONG_SUMMARY, f"f{i}.md") for i in range(30))
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(MemoryPanel)
        panel.show(_state(project=many, cut_note="index cut: 12 notes not shown"))
        scroll = panel.query_one(VerticalScroll)
        # The list overflows the panel, and it is not scrolled.
        await wait_until(pilot, lambda: "Fact 0" in "\n".join(panel_lines(app)) and scroll.max_scroll_y > 0)
        assert scroll.scroll_y == 0
        lines = panel_lines(app)
        assert lines[0].startswith("Memory") and lines[1].strip() == "index cut: 12 notes not shown"


async def test_untrusted_cards_are_each_marked_untrusted() -> None:
    app = PanelApp()
    cloned = (
        PanelCard("project_knowledge", "Cloned fact", "from the repo", "a.md", untrusted=True),
        PanelCard("reference_material", "No summary", "", "b.md", untrusted=True),
    )
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(MemoryPanel)
        panel.show(_state(project=cloned, project_note="untrusted — not used until you trust it"))
        await wait_until(pilot, lambda: "Answers in English" in "\n".join(panel_lines(app)))
        lines = panel_lines(app)
        i = next(k for k, line in enumerate(lines) if "Cloned fact" in line)
        assert lines[i + 1].strip() == "untrusted · from the repo"
        j = next(k for k, line in enumerate(lines) if "No summary" in line)
        assert lines[j + 1].strip() == "untrusted"
        # The user's (trusted) card has no tag.
        k = next(k for k, line in enumerate(lines) if "Answers in English" in line)
        assert "untrusted" not in lines[k + 1]


class PromptFirstApp(App[None]):
    """The App's layout in small: a prompt before the panel in the focus chain."""

    CSS = "#main { height: 1fr; } #left { width: 1fr; }"

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield Input(id="left")
            yield MemoryPanel(id="panel")


async def test_the_card_list_scrolls_from_the_keyboard_once_focused_but_the_prompt_keeps_focus_at_start() -> (
    None
):
    app = PromptFirstApp()
    many = tuple(PanelCard("project_knowledge", f"Fact {i}", LONG_SUMMARY, f"f{i}.md") for i in range(30))
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(MemoryPanel)
        panel.show(_state(project=many))
        scroll = panel.query_one(VerticalScroll)
        await wait_until(pilot, lambda: scroll.max_scroll_y > 0)
        assert app.focused is app.query_one(Input)
        await pilot.press("tab")
        await wait_until(pilot, lambda: app.focused is scroll)
        await pilot.press("pagedown")
        await wait_until(pilot, lambda: scroll.scroll_y > 0)
        await pilot.press("end")
        await wait_until(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y)


def _info(**kw: object) -> StatusInfo:
    base: dict[str, object] = {
        "workspace": "~/src/very/deeply/nested/projects/pseudoclaude",
        "model": "claude-sonnet-5-5",
        "memory_mode": "auto",
        "last_turn": "12.3k in · 840 out · 10k cached",
        "cost": "$0.42",
        "pending": 2,
        "note": "",
    }
    base.update(kw)
    return StatusInfo(**base)  # type: ignore[arg-type]


async def test_the_status_line_fits_one_row_at_80_columns_keeping_the_essentials() -> None:
    app = PanelApp()
    async with app.run_test(size=(80, 24)) as pilot:
        status = app.query_one(StatusLine)
        status.show(_info(note="connecting…"))
        await wait_until(pilot, lambda: "connecting…" in screen_lines(app)[-1])
        row = screen_lines(app)[-1]
        for part in ("connecting…", "claude-sonnet-5-5", "memory auto", "$0.42", "2 pending"):
            assert part in row, (part, row)
        assert status.region.height == 1
        assert "12.3k in" not in row  # the first thing given up when the row is narrow
        status.show(_info())
        await wait_until(pilot, lambda: "connecting…" not in screen_lines(app)[-1])
        assert (
            " …/projects/pseudoclaude │ claude-sonnet-5-5" in screen_lines(app)[-1]
        )  # the tail, whole folders
        # Narrower still (the status line in a split column): the workspace goes, the cost stays.
        status.show(_info(note="connecting…"))
        narrow = status.line(60).plain
        assert "$0.42" in narrow and "2 pending" in narrow and "connecting…" in narrow
        assert "pseudoclaude" not in narrow


async def test_the_status_line_shows_everything_when_wide_and_never_control_sequences() -> None:
    app = PanelApp()
    async with app.run_test(size=(200, 24)) as pilot:
        status = app.query_one(StatusLine)
        status.show(_info(pending=0, model="evil\x1b[2Jmodel"))
        await wait_until(pilot, lambda: "12.3k in · 840 out · 10k cached" in screen_lines(app)[-1])
        row = screen_lines(app)[-1]
        assert "~/src/very/deeply/nested/projects/pseudoclaude" in row and "evilmodel" in row
        assert "pending" not in row  # no jobs: nothing to say
        assert "\x1b" not in status.line(200).plain


def test_status_line_text_never_exceeds_the_width_it_is_given() -> None:
    status = StatusLine(_info(note="memory model: no credentials"))
    for width in (20, 40, 60, 80, 120):
        assert cell_len(status.line(width).plain) <= width
    # A status row beside nothing but a narrow column still names model, cost and jobs.
    assert status.line(48).plain == "memory model: no credentials │ sonnet-5-5 │ aut…"
    assert StatusLine(_info()).line(48).plain == "sonnet-5-5 │ auto │ $0.42 │ 2 pending"


def test_helpers_wrap_and_shorten_by_terminal_cells() -> None:
    assert shorten_left("~/src/projects/app", 14) == "…/projects/app"
    assert shorten_left("~/src/projects/app", 12) == "…/app"  # cut at a folder boundary
    assert shorten_left("short", 10) == "short"
    assert wrap_cells("one two three four five six", 9, 2) == ["one two", "three…"]
    assert wrap_cells("日本語のテキスト", 6, 2) == ["日本語", "のテ…"]
    assert wrap_cells("", 10, 2) == []


def test_status_line_points_to_f2_while_the_panel_is_hidden_and_counts_new_cards_in_80_columns() -> None:
    assert "F2" not in StatusLine(_info()).line(200).plain  # the panel is shown: no hint
    assert StatusLine(_info(panel_hidden=True)).line(200).plain.endswith("│ F2 memory")
    hidden = _info(panel_hidden=True, new_cards=3)
    assert StatusLine(hidden).line(200).plain.endswith("│ F2 memory · 3 new")
    # One row at 80 columns (78 cells inside the padding), even with a note: the hint shrinks
    # before the row's end would cut it.
    for info in (hidden, _info(panel_hidden=True, new_cards=3, note="no model configured")):
        row = StatusLine(info).line(78).plain
        assert cell_len(row) <= 78 and "…" not in row.split("│")[-1], row
        assert row.endswith(("F2 memory · 3 new", "F2 · 3 new")) and "2 pending" in row, row
    assert StatusLine(hidden).line(78).plain.endswith("F2 memory · 3 new")


async def test_a_job_line_that_only_changes_its_words_repaints_without_a_layout_pass(monkeypatch) -> None:
    """The panel is refreshed at every memory event, often while an answer streams: a layout
    pass lays out the whole screen (the chat's blocks included), so it is asked for only when a
    height changes. The words still change on the screen."""
    app = PanelApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(MemoryPanel)
        panel.show(_state(jobs=(PanelJob("a", "queued · fix the login bug"),)))
        await wait_until(pilot, lambda: any("queued · fix the login" in line for line in panel_lines(app)))
        await pilot.pause()
        layouts: list[int] = []
        screen_type = type(app.screen)
        refresh_layout = screen_type._refresh_layout

        def counted(self: object, *args: object, **kwargs: object) -> None:
            layouts.append(1)
            refresh_layout(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(screen_type, "_refresh_layout", counted)
        panel.show(_state(jobs=(PanelJob("a", "extracting · fix the login bug"),)))
        await wait_until(pilot, lambda: any("extracting · fix the" in line for line in panel_lines(app)))
        panel.show(_state(jobs=(PanelJob("a", "extracting · fix the login bug"),)))  # the same state again
        await pilot.pause()
        assert layouts == []
        # (A job more is a line more: that change is laid out, as the other panel tests show.)

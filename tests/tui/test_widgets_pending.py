"""The pending-updates screen in a tiny host App: rows and sections, expansion and the detail
pane, every contract key (and each refusal), selection across show(), the live countdown, and
hostile text shown literally."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import get_args

import pytest
from textual.app import App, ComposeResult
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Static

from tests.tui.conftest import wait_until
from widgets.pending.job_list import PendingList
from widgets.pending.job_text import STATE_STYLES, format_age
from widgets.pending.screen import KEY_HINTS, PendingScreen
from widgets.pending.state import PendingJob, PendingJobState, PendingOp, PendingState

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def later(**delta: float) -> str:
    return (NOW + timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


UPDATE = PendingOp(
    index=0,
    action="update",
    level="project",
    type="project_knowledge",
    title="Build workflow",
    summary="how to build",
    filename="project_build.md",
    status="held",
    before="# Build workflow\nold\nkeep\n",
    after="# Build workflow\nnew\nkeep\n",
)
DELETE = PendingOp(
    index=1,
    action="delete",
    level="user",
    type="",
    title="Stale preference",
    summary="",
    filename="user_stale.md",
    status="held",
    before="# Stale preference\nuse tabs everywhere\n",
)
CREATE = PendingOp(
    index=2,
    action="create",
    level="project",
    type="reference_material",
    title="API docs",
    summary="where the docs live",
    filename="",
    status="held",
    after="# API docs\nsee docs/api.md\n",
)
APPLIED_OP = replace(CREATE, index=3, title="Already in", status="applied")

QUEUED = PendingJob(id="j-queued", state="queued", excerpt="add a build step", created=ago(seconds=12))
EXTRACTING = PendingJob(
    id="j-extract", state="extracting", excerpt="rename the module", created=ago(minutes=3)
)
RETRYING = PendingJob(
    id="j-retry",
    state="retrying",
    excerpt="why does CI fail",
    created=ago(hours=2),
    attempt=2,
    next_try_at=later(seconds=4),
)
FAILED = PendingJob(
    id="j-failed", state="failed", excerpt="fix the login", created=ago(days=4), reason="rate limited"
)
HELD = PendingJob(
    id="j-held",
    state="held",
    excerpt="remember how we build",
    created=ago(seconds=30),
    ops=(UPDATE, DELETE, CREATE, APPLIED_OP),
)
DAMAGED = PendingJob(
    id="j-damaged", state="damaged", excerpt="", created=ago(minutes=1), reason="not valid JSON"
)
APPLIED = PendingJob(
    id="j-applied", state="applied", excerpt="use make", created=ago(minutes=5), counts=(1, 2, 0)
)
ORPHANED = PendingJob(
    id="j-orphan", state="orphaned", excerpt="old project", created=ago(days=9), workspace="/src/gone"
)

ALL = PendingState(
    jobs=(QUEUED, EXTRACTING, RETRYING, FAILED, HELD, DAMAGED, APPLIED, ORPHANED), mode="review"
)


class Host(App[None]):
    def __init__(self, screen: PendingScreen) -> None:
        super().__init__()
        self.pending = screen
        self.posted: list[Message] = []

    def compose(self) -> ComposeResult:
        yield Static("the chat")

    def on_mount(self) -> None:
        self.push_screen(self.pending)

    def on_pending_screen_approve(self, message: PendingScreen.Approve) -> None:
        self.posted.append(message)

    def on_pending_screen_reject(self, message: PendingScreen.Reject) -> None:
        self.posted.append(message)

    def on_pending_screen_retry(self, message: PendingScreen.Retry) -> None:
        self.posted.append(message)

    def on_pending_screen_dismiss(self, message: PendingScreen.Dismiss) -> None:
        self.posted.append(message)


def screen_lines(app: App[None]) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def host(state: PendingState = ALL, clock: Clock | None = None) -> Host:
    return Host(PendingScreen(state, clock=clock or Clock()))


async def ready(pilot: Pilot[None]) -> PendingScreen:
    app = pilot.app
    assert isinstance(app, Host)
    await wait_until(
        pilot, lambda: app.screen is app.pending and app.pending.query_one(PendingList).size.width > 0
    )
    return app.pending


async def select_job(pilot: Pilot[None], screen: PendingScreen, job_id: str) -> None:
    """Put the cursor on ``job_id``'s row (moving the cursor by key is tested on its own)."""
    lst = screen.query_one(PendingList)
    index = next(i for i, row in enumerate(lst.rows) if row.key == (job_id, None))
    lst.select(index)
    await wait_until(pilot, lambda: screen.selected_job is not None and screen.selected_job.id == job_id)


async def messages_after(pilot: Pilot[None], app: Host) -> list[Message]:
    """What the screen posted so far: a sentinel posted after them arrives after them."""
    sentinel = PendingScreen.Retry("sentinel")
    app.pending.post_message(sentinel)
    await wait_until(pilot, lambda: sentinel in app.posted, what="the sentinel")
    return [m for m in app.posted if m is not sentinel]


def test_the_widget_state_enum_covers_every_spooled_state_and_each_has_a_look() -> None:
    """The widget owns its states (it imports nothing of memory.jobs): every state a spool
    listing gives, plus this session's outcomes, is one of them, and each has a marker."""
    from memory.jobs.spool import JobViewState

    assert set(get_args(JobViewState)) | {"applied", "rejected"} == {s.value for s in PendingJobState}
    assert set(STATE_STYLES) == set(PendingJobState)
    assert (
        PendingJob(id="j", state=PendingJobState("held"), excerpt="", created="").state
        is PendingJobState.HELD
    )


def test_format_age_units() -> None:
    assert [format_age(s) for s in (0, 12, 59, 60, 185, 3600, 7300, 86400, 400000)] == [
        "0s",
        "12s",
        "59s",
        "1m",
        "3m",
        "1h",
        "2h",
        "1d",
        "4d",
    ]


async def test_rows_and_sections_for_every_state() -> None:
    app = host()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await ready(pilot)
        rows = screen.row_texts()
        assert rows[0] == "Pending 6"
        applied_heading = rows.index("Applied this session 1")
        orphan_heading = rows.index("Orphaned (workspace gone) 1")
        assert rows[applied_heading - 1] == "" and applied_heading < orphan_heading

        def row_of(text: str) -> tuple[int, str]:
            found = [(i, r) for i, r in enumerate(rows) if text in r]
            assert len(found) == 1, (text, rows)
            return found[0]

        expected = [
            ("· queued  add a build step", "12s"),
            ("● extracting  rename the module", "3m"),
            ("↻ retrying 2/3 · next try in 4s  why does CI fail", "2h"),
            ("✗ failed: rate limited  fix the login", "4d"),
            ("◆ held · 3 ops  remember how we build", "30s"),
            ("! damaged: not valid JSON", "1m"),
            ("✓ applied +1 ~2 −0  use make", "5m"),
            ("○ orphaned  old project", "9d"),
        ]
        positions = []
        for text, age in expected:
            i, row = row_of(text)
            assert row.startswith("▸ " + text)
            # The age is right-aligned at the list's edge.
            assert (
                row.endswith(" " + age)
                and len(row) == len(rows[i]) == screen.query_one(PendingList).row_width
            )
            positions.append(i)
        assert positions[:6] == sorted(positions[:6]) and positions[5] < applied_heading < positions[6]
        assert positions[6] < orphan_heading < positions[7]
        lines = screen_lines(app)
        assert lines[0].strip() == "Pending memory updates · 8 jobs · mode: review"
        assert any("↻ retrying 2/3 · next try in 4s" in line for line in lines)
        assert lines[-1].strip() == KEY_HINTS


async def test_empty_state_says_so_and_shows_the_auto_mode_hint() -> None:
    app = host(PendingState(jobs=(), note="could not read the spool: denied"))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await ready(pilot)
        assert screen.row_texts()[0] == "No pending memory updates."
        assert screen.selected_job is None
        lines = screen_lines(app)
        assert (
            lines[0].strip()
            == "Pending memory updates · 0 jobs · mode: auto · /mode review holds updates for approval"
        )
        assert lines[1].strip() == "could not read the spool: denied"
        assert any("No pending memory updates." in line for line in lines)
        await pilot.press("a")
        await wait_until(
            pilot, lambda: any("nothing selected to approve" in line for line in screen_lines(app))
        )
        assert await messages_after(pilot, app) == []


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_key_hints_and_the_selected_row_are_visible(size: tuple[int, int]) -> None:
    many = tuple(replace(QUEUED, id=f"q{i}", excerpt=f"turn number {i}") for i in range(40))
    app = host(PendingState(jobs=(*many, FAILED, ORPHANED)))
    async with app.run_test(size=size) as pilot:
        screen = await ready(pilot)
        assert screen.selected_job is not None and screen.selected_job.id == "q0"
        await pilot.press("end")
        await wait_until(
            pilot, lambda: screen.selected_job is not None and screen.selected_job.id == "j-orphan"
        )

        def visible(text: str) -> bool:
            return any(text in line for line in screen_lines(app))

        await wait_until(
            pilot, lambda: visible("○ orphaned  old project"), what="the selection scrolled into view"
        )
        assert screen_lines(app)[-1].strip() == KEY_HINTS
        assert screen_lines(app)[0].startswith(" Pending memory updates · 42 jobs")
        # The list comes first: left when wide, on top when narrow.
        lst = screen.query_one(PendingList).region
        detail = screen.query_one("#detail-scroll").region
        if size[0] < 100:
            assert detail.y >= lst.bottom and detail.x == lst.x
        else:
            assert detail.x >= lst.right and detail.y == lst.y
        await pilot.press("home")
        await wait_until(pilot, lambda: visible("turn number 0"), what="home scrolled back")
        await pilot.press("pagedown")
        await wait_until(
            pilot, lambda: screen.selected_job is not None and screen.selected_job.id not in ("q0",)
        )
        job = screen.selected_job
        assert job is not None
        await wait_until(pilot, lambda: visible(f"{job.excerpt} "), what="pagedown's row visible")
        await pilot.press("pageup")
        await wait_until(pilot, lambda: screen.selected_job is not None and screen.selected_job.id == "q0")


async def test_the_cursor_skips_headings_and_blank_rows() -> None:
    app = host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        assert screen.selected_job == QUEUED
        await pilot.press("up")  # already first: the heading above cannot be selected
        await pilot.pause()
        assert screen.selected_job == QUEUED
        await select_job(pilot, screen, DAMAGED.id)
        await pilot.press("down")  # over the blank line and the "Applied" heading
        await wait_until(pilot, lambda: screen.selected_job == APPLIED)


async def test_the_selected_row_is_highlighted_and_a_click_selects() -> None:
    app = host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        lst = screen.query_one(PendingList)

        def background(row: int) -> object:
            strip = app.screen._compositor.render_strips()[lst.region.y + row]
            return strip.crop(lst.region.x + 4, lst.region.x + 5)._segments[0].style.bgcolor

        # Row 1 is the first job (row 0 the heading); row 2 the next job.
        await wait_until(pilot, lambda: background(1) != background(2), what="the highlight")
        highlight = background(1)
        await pilot.click(PendingList, offset=(6, 4))
        await wait_until(pilot, lambda: screen.selected_job == FAILED)
        await wait_until(pilot, lambda: background(4) == highlight and background(1) != highlight)
        await pilot.click(PendingList, offset=(6, 0))  # the heading: not selectable
        await pilot.pause()
        assert screen.selected_job == FAILED


async def test_enter_expands_into_ops_and_the_detail_shows_each_change() -> None:
    app = host()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await ready(pilot)
        await select_job(pilot, screen, HELD.id)
        assert "a approve all held · r reject all held" in screen.detail_text()
        await pilot.press("enter")
        await wait_until(pilot, lambda: HELD.id in screen.expanded)
        rows = screen.row_texts()
        i = next(i for i, r in enumerate(rows) if "◆ held" in r)
        assert rows[i].startswith("▾ ")
        assert rows[i + 1 : i + 5] == [
            "  [held] update · project · Build workflow",
            "  [held] delete · user · Stale preference",
            "  [held] create · project · API docs",
            "  [applied] create · project · Already in",
        ]
        await pilot.press("down")
        await wait_until(pilot, lambda: screen.selected_op == UPDATE)
        detail = screen.detail_text().split("\n")
        assert detail[:3] == ["update · project · project_knowledge", "Build workflow", "how to build"]
        assert "-old" in detail and "+new" in detail and " keep" in detail
        await wait_until(
            pilot,
            lambda: any(line.rstrip().endswith(" +new") for line in screen_lines(app)),
            what="diff drawn",
        )
        await pilot.press("down")
        await wait_until(pilot, lambda: screen.selected_op == DELETE)
        detail = screen.detail_text()
        assert (
            "Would delete: moves to .trash/ (undo restores it)\n# Stale preference\nuse tabs everywhere"
            in detail
        )
        await pilot.press("down")
        await wait_until(pilot, lambda: screen.selected_op == CREATE)
        assert "New card:\n# API docs\nsee docs/api.md" in screen.detail_text()
        await pilot.press("enter")  # on an op row: harmless
        await pilot.press("up", "up", "up", "enter")
        await wait_until(pilot, lambda: HELD.id not in screen.expanded)
        assert not any("[held]" in r for r in screen.row_texts())
        assert screen.selected_job == HELD and screen.selected_op is None


async def test_a_job_without_ops_expands_to_a_dim_note() -> None:
    app = host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        await select_job(pilot, screen, FAILED.id)
        assert "reason: rate limited" in screen.detail_text()
        await pilot.press("enter")
        await wait_until(pilot, lambda: "  (no operations)" in screen.row_texts())
        await pilot.press("down")  # the note is not selectable
        await wait_until(pilot, lambda: screen.selected_job == HELD)


async def test_detail_for_a_card_that_is_gone() -> None:
    gone = replace(UPDATE, before=None)
    app = host(PendingState(jobs=(replace(HELD, ops=(gone,)),)))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        await pilot.press("enter", "down")
        await wait_until(pilot, lambda: screen.selected_op == gone)
        assert "the card is not there any more" in screen.detail_text()


@pytest.mark.parametrize(
    ("job_id", "down", "key", "expected"),
    [
        (HELD.id, 0, "a", PendingScreen.Approve(HELD.id, None)),
        (HELD.id, 0, "r", PendingScreen.Reject(HELD.id, None)),
        (HELD.id, 2, "a", PendingScreen.Approve(HELD.id, (1,))),
        (HELD.id, 3, "r", PendingScreen.Reject(HELD.id, (2,))),
        (FAILED.id, 0, "t", PendingScreen.Retry(FAILED.id)),
        (FAILED.id, 0, "x", PendingScreen.Dismiss(FAILED.id)),
        (ORPHANED.id, 0, "x", PendingScreen.Dismiss(ORPHANED.id)),
    ],
)
async def test_keys_post_their_message(job_id: str, down: int, key: str, expected: Message) -> None:
    app = host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        await select_job(pilot, screen, job_id)
        if down:
            await pilot.press("enter", *["down"] * down)
            await wait_until(pilot, lambda: screen.selected_op is not None)
        await pilot.press(key)
        await wait_until(pilot, lambda: len(app.posted) == 1, what=f"{key} to post")
        assert app.posted == [expected]
        assert await messages_after(pilot, app) == [expected]
        assert app.screen is screen


@pytest.mark.parametrize(
    ("job_id", "down", "key", "reason"),
    [
        (FAILED.id, 0, "a", "only held updates can be approved: this job is failed"),
        (QUEUED.id, 0, "r", "only held updates can be rejected: this job is queued"),
        (HELD.id, 4, "a", "only held updates can be approved: this update is applied"),
        (HELD.id, 0, "t", "only a failed job can be retried"),
        (APPLIED.id, 0, "t", "only a failed job can be retried"),
        (HELD.id, 0, "x", "only a failed or orphaned job can be dismissed"),
        (DAMAGED.id, 0, "x", "a damaged job file: run `pseudoclaude memory doctor --fix` to move it aside"),
    ],
)
async def test_refused_keys_flash_why_and_post_nothing(job_id: str, down: int, key: str, reason: str) -> None:
    app = host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        await select_job(pilot, screen, job_id)
        if down:
            await pilot.press("enter", *["down"] * down)
            await wait_until(pilot, lambda: screen.selected_op is not None)
        await pilot.press(key)
        await wait_until(pilot, lambda: screen_lines(app)[-2].strip() == reason, what="the flash")
        assert await messages_after(pilot, app) == []
        # The refusal goes away once the user moves on.
        await pilot.press("end")
        await wait_until(pilot, lambda: screen_lines(app)[-2].strip() != reason, what="the flash to clear")


async def test_flash_from_the_app_is_shown_above_the_hints() -> None:
    app = host()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await ready(pilot)
        screen.flash("approved 2 updates \x1b[31m[bold]")
        await wait_until(pilot, lambda: screen_lines(app)[-2].strip() == "approved 2 updates [bold]")
        screen.flash("")
        await wait_until(pilot, lambda: screen_lines(app)[-2].strip() != "approved 2 updates [bold]")


async def test_escape_goes_back_to_the_chat() -> None:
    app = host()
    async with app.run_test() as pilot:
        screen = await ready(pilot)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is not screen)
        assert screen_lines(app)[0].startswith("the chat")


async def test_show_hands_the_selection_to_the_job_split_from_the_selected_one() -> None:
    app = host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        await select_job(pilot, screen, HELD.id)
        await pilot.press("enter", "down", "down")
        await wait_until(pilot, lambda: screen.selected_op == DELETE)
        # The update was approved: the rest moved to a new job.
        rest = replace(HELD, id="j-held-2", split_from=HELD.id, ops=(DELETE, CREATE))
        done = replace(HELD, id="j-done", state="applied", ops=(), counts=(0, 1, 0))
        jobs = (*(rest if j is HELD else j for j in ALL.jobs), done)
        screen.show(replace(ALL, jobs=jobs))
        assert screen.expanded == frozenset({"j-held-2"})
        assert screen.selected_job == rest and screen.selected_op == DELETE
        await wait_until(
            pilot,
            lambda: any("[held] delete · user · Stale preference" in line for line in screen_lines(app)),
        )
        assert "Would delete:" in screen.detail_text()
        # The same state again: nothing moves.
        screen.show(replace(ALL, jobs=jobs))
        assert screen.selected_job == rest and screen.selected_op == DELETE


async def test_the_split_job_takes_over_even_when_the_approved_job_is_listed_as_applied() -> None:
    # The App lists an approved job as "applied" under its own id: its held rest still takes over.
    app = host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        await select_job(pilot, screen, HELD.id)
        await pilot.press("enter", "down")
        await wait_until(pilot, lambda: screen.selected_op is not None)
        rest = replace(HELD, id="j-held-2", split_from=HELD.id, ops=(DELETE, CREATE))
        applied = replace(HELD, state="applied", ops=(), counts=(0, 1, 0))
        jobs = (*(rest if j is HELD else j for j in ALL.jobs), applied)
        screen.show(replace(ALL, jobs=jobs))
        assert screen.expanded == frozenset({"j-held-2"})
        assert screen.selected_job == rest and screen.selected_op == DELETE


async def test_show_keeps_the_selection_by_identity_and_falls_back_sensibly() -> None:
    app = host()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        await select_job(pilot, screen, HELD.id)
        await pilot.press("enter", "down", "down", "down")
        await wait_until(pilot, lambda: screen.selected_op == CREATE)
        # A new job ahead of it: the same op stays selected.
        screen.show(replace(ALL, jobs=(replace(QUEUED, id="new"), *ALL.jobs)))
        assert screen.selected_op == CREATE and HELD.id in screen.expanded
        # The op is gone (applied and dropped): its job's row.
        held = replace(HELD, ops=(UPDATE, DELETE))
        screen.show(PendingState(jobs=(QUEUED, RETRYING, held, FAILED)))
        assert screen.selected_job == held and screen.selected_op is None
        # The job is gone with no heir: the row now at its place (clamped to the list).
        screen.show(PendingState(jobs=(QUEUED, RETRYING, FAILED)))
        assert screen.selected_job == FAILED
        assert screen.expanded == frozenset()
        screen.show(PendingState(jobs=(QUEUED,)))
        assert screen.selected_job == QUEUED
        screen.show(PendingState(jobs=()))
        assert screen.selected_job is None
        await wait_until(
            pilot, lambda: any("No pending memory updates." in line for line in screen_lines(app))
        )


async def test_the_timer_counts_down_without_moving_the_selection() -> None:
    clock = Clock()
    app = host(clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        await select_job(pilot, screen, RETRYING.id)
        lst = screen.query_one(PendingList)

        def drawn(text: str) -> bool:
            return any(text in line for line in screen_lines(app))

        await wait_until(pilot, lambda: drawn("next try in 4s"))
        assert "next try in 4s" in screen.detail_text()
        clock.now = NOW + timedelta(seconds=2)
        # Nothing but the timer repaints the screen here (the list and the detail pane).
        await wait_until(
            pilot,
            lambda: (
                drawn("▸ ↻ retrying 2/3 · next try in 2s  why does CI fail") and not drawn("next try in 4s")
            ),
            timeout=5,
            what="the countdown",
        )
        assert any("next try in 4s" not in r and "next try in 2s" in r for r in screen.row_texts())
        clock.now = NOW + timedelta(seconds=10)
        await wait_until(pilot, lambda: drawn("next try now"), timeout=5)
        assert screen.selected_job == RETRYING and screen.query_one(PendingList) is lst


async def test_hostile_text_is_shown_literally() -> None:
    op = replace(
        UPDATE, title="\x1b[31m[bold]x[/bold]\u202e", summary="[red]s[/red]", filename="a\x1b]0;t\x07.md"
    )
    job = replace(HELD, excerpt="\x1b[31mred[bold]x[/bold]\x1b[0m", ops=(op,), reason="[link=x]y[/link]")
    app = host(PendingState(jobs=(job,), mode="review", note="\x1b[2J[b]n[/b]"))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(screen.row_texts()) == 3)
        rows = screen.row_texts()
        assert "red[bold]x[/bold]" in rows[1]
        assert rows[2] == "  [held] update · project · [bold]x[/bold]"
        assert "red[bold]x[/bold]" in screen.detail_text()
        await pilot.press("down")
        await wait_until(pilot, lambda: screen.selected_op == op)
        detail = screen.detail_text()
        assert "[bold]x[/bold]\n[red]s[/red]\nfile: a.md" in detail
        await wait_until(pilot, lambda: any("[red]s[/red]" in line for line in screen_lines(app)))
        lines = screen_lines(app)
        assert any("red[bold]x[/bold]" in line for line in lines)
        assert any("[b]n[/b]" in line for line in lines)
        joined = "\n".join(lines) + screen.detail_text()
        assert "\x1b" not in joined and "\u202e" not in joined and "\x07" not in joined


REFUSED = replace(
    UPDATE,
    index=0,
    status="rejected",
    before=None,
    after=None,
    reason="op 0: no note named 'gone.md'",
)
CONFLICTED = replace(
    DELETE, index=1, status="conflict", before=None, reason="user note 'user_stale.md' changed since"
)
REJECTED = PendingJob(
    id="j-rejected",
    state="rejected",
    excerpt="forget the old build",
    created=ago(minutes=7),
    ops=(REFUSED, CONFLICTED),
)
PARTLY = PendingJob(
    id="j-partly",
    state="applied",
    excerpt="two facts",
    created=ago(minutes=2),
    counts=(1, 0, 0),
    ops=(replace(APPLIED_OP, index=0), replace(REFUSED, index=1, reason="op 1: content is empty")),
)


async def test_a_job_whose_every_op_was_refused_reads_rejected_with_the_count_and_first_reason() -> None:
    app = host(PendingState(jobs=(QUEUED, APPLIED, REJECTED)))
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await ready(pilot)
        rows = screen.row_texts()
        assert "Rejected this session 1" in rows and "Applied this session 1" in rows
        heading = rows.index("Rejected this session 1")
        row = rows[heading + 1]
        assert row.startswith("▸ ⊘ rejected: 2 ops · op 0: no note named 'gone.md'  forget the old build"), (
            row
        )
        assert row.endswith(" 7m")
        assert not any("applied +0" in r for r in rows)
        await select_job(pilot, screen, REJECTED.id)
        detail = screen.detail_text().split("\n")
        assert detail[0] == "⊘ rejected: 2 ops · op 0: no note named 'gone.md'"
        assert "reason: op 0: no note named 'gone.md'" in detail
        assert "applied: nothing: every operation was refused" in detail
        assert "operations: 2 (1 rejected, 1 conflict)" in detail
        assert not any("applied +" in line for line in detail)
        await pilot.press("enter")
        await wait_until(pilot, lambda: "  [conflict] delete · user · Stale preference" in screen.row_texts())


async def test_a_job_with_some_ops_applied_and_some_rejected_says_both_in_the_row_and_the_detail() -> None:
    app = host(PendingState(jobs=(PARTLY,)))
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await ready(pilot)
        rows = screen.row_texts()
        assert rows[0] == "Applied this session 1"
        assert rows[1].startswith("▸ ✓ applied +1 ~0 −0, 1 rejected  two facts"), rows
        detail = screen.detail_text().split("\n")
        assert detail[0] == "✓ applied +1 ~0 −0, 1 rejected"
        assert "applied: 1 created, 0 updated, 0 deleted" in detail
        assert "not written: 1 rejected · op 1: content is empty" in detail

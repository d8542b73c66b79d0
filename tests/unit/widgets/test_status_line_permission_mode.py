"""The status line names a permission mode other than default right after the note, and keeps it
when the row is narrow (what runs without asking is never the part that is cut); in default it
shows nothing, so the row is the same as before modes existed."""

from __future__ import annotations

from rich.cells import cell_len

from widgets.chat.status import StatusInfo, StatusLine


def _info(**kw: object) -> StatusInfo:
    base: dict[str, object] = {
        "workspace": "~/src/very/deeply/nested/projects/pseudoclaude",
        "model": "claude-sonnet-5-5",
        "memory_mode": "auto",
        "last_turn": "12.3k in · 840 out · 10k cached",
        "cost": "$0.42",
        "pending": 2,
    }
    base.update(kw)
    return StatusInfo(**base)  # type: ignore[arg-type]  # the fields above, by name


def test_default_shows_no_mode_and_the_row_is_unchanged() -> None:
    plain = StatusLine(_info()).line(200).plain
    assert StatusLine(_info(permission_mode="default")).line(200).plain == plain
    assert "accept" not in plain and "plan" not in plain


def test_accept_edits_and_plan_come_first_after_the_note() -> None:
    accept = StatusLine(_info(permission_mode="accept-edits")).line(200).plain
    assert accept.startswith("⏵⏵ accept edits │ ~/src/very")
    plan = StatusLine(_info(permission_mode="plan", note="connecting…")).line(200).plain
    assert plan.startswith("connecting… │ ⏸ plan mode │ ~/src/very")


def test_a_narrow_row_keeps_the_mode() -> None:
    status = StatusLine(_info(permission_mode="plan", panel_hidden=True, new_cards=3))
    for width in (40, 60, 78):
        row = status.line(width).plain
        assert row.startswith("⏸ plan mode │ "), row
        assert cell_len(row) <= width

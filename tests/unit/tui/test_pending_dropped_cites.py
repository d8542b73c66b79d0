"""The pending screen names each citation a job's batch did not keep, with its reason."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from app.tui.screens.applied_record import applied_record
from memory.constants import Action, Level
from memory.events import JobApplied
from memory.model import AppliedOp, DroppedCite
from memory.store.stores import MemoryStores
from tests.support.memviews import pending_state
from widgets.pending.job_detail import DROPPED_SHOWN, job_detail


def _event(dropped: list[DroppedCite]) -> JobApplied:
    applied = AppliedOp(
        index=0, action=Action.CREATE, level=Level.PROJECT, filename="project_knowledge_b.md", title="B"
    )
    return JobApplied(
        job_id="j1", applied=(applied,), dropped_cites=tuple(dropped), created="2026-12-01T10:00:00Z"
    )


def test_an_applied_jobs_detail_lists_its_dropped_citations(tmp_path: Path) -> None:
    dropped = [
        DroppedCite(
            index=0, cite="../etc/passwd", reason="'../etc/passwd' leaves the workspace through '..'"
        ),
        DroppedCite(
            index=0,
            cite="notes.txt",
            reason="a user card is shared by every workspace: citations are kept on project cards only",
        ),
    ]
    stores = MemoryStores(tmp_path)
    (job,) = pending_state(stores, [], [], [applied_record(_event(dropped), "how do I build?")], "auto").jobs
    assert job.dropped == (
        "op 0: '../etc/passwd' leaves the workspace through '..'",
        "op 0: 'notes.txt': a user card is shared by every workspace: "
        "citations are kept on project cards only",
    )
    text = job_detail(job, datetime(2026, 12, 1, 10, 1, tzinfo=UTC), expanded=False).plain
    assert "citation dropped: op 0: '../etc/passwd' leaves the workspace through '..'" in text
    assert "citation dropped: op 0: 'notes.txt': a user card" in text


def test_many_dropped_citations_are_counted_past_the_first_few(tmp_path: Path) -> None:
    dropped = [
        DroppedCite(index=i, cite=f"../x{i}", reason=f"'../x{i}' leaves the workspace through '..'")
        for i in range(DROPPED_SHOWN + 3)
    ]
    (job,) = pending_state(
        MemoryStores(tmp_path), [], [], [applied_record(_event(dropped), "t")], "auto"
    ).jobs
    text = job_detail(job, datetime(2026, 12, 1, 10, 1, tzinfo=UTC), expanded=False).plain
    assert text.count("citation dropped:") == DROPPED_SHOWN
    assert "citations dropped: 3 more" in text

"""Hosts that put the memory screens into a fixed state: the pending screen with a held job and
its diff or a failed job, the card browser with both levels, the editor with a validation
error, and the conflict view. No clock, path, disk or network: a fixed ``now`` and fixed data.
"""

from __future__ import annotations

from datetime import UTC, datetime

from textual.app import App, ComposeResult
from textual.widgets import Static

from tests.tui.snapshot_apps.hosts import APP_CSS
from widgets.cards.browser import CardBrowser
from widgets.cards.card_list import CardRow
from widgets.cards.conflict import ConflictModal
from widgets.cards.draft import CardDraft
from widgets.cards.editor import CardEditor
from widgets.pending.screen import PendingScreen
from widgets.pending.state import PendingJob, PendingOp, PendingState

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def fixed_now() -> datetime:
    return NOW


BUILD_BEFORE = """\
title: Build workflow
summary: make build, then make test
type: project_knowledge

Run `make build` then `make test` from the repository root."""

BUILD_AFTER = """\
title: Build workflow
summary: make build, make test, make release from main
type: project_knowledge

Run `make build` then `make test` from the repository root.

Releases: `make release`, from main only (CI tags vX.Y.Z)."""

UV_CARD = """\
title: Use uv for Python dependencies
summary: uv sync, never a global pip install
type: user_preference

Install with `uv sync`; add packages with `uv add NAME`."""

HELD = PendingJob(
    id="01796070000000000001-1a2b3c4d",
    state="held",
    excerpt="How do I cut a release of this project?",
    created="2026-11-30T11:58:30Z",
    ops=(
        PendingOp(
            index=0,
            action="update",
            level="project",
            type="project_knowledge",
            title="Build workflow",
            summary="make build, make test, make release from main",
            filename="project_knowledge_build-workflow.md",
            status="held",
            before=BUILD_BEFORE,
            after=BUILD_AFTER,
        ),
        PendingOp(
            index=1,
            action="create",
            level="user",
            type="user_preference",
            title="Use uv for Python dependencies",
            summary="uv sync, never a global pip install",
            filename="",
            status="held",
            after=UV_CARD,
        ),
        PendingOp(
            index=2,
            action="update",
            level="project",
            type="",
            title="",
            summary="",
            filename="project_knowledge_gone.md",
            status="rejected",
            reason="op 2: no note named 'project_knowledge_gone.md' in the project store",
        ),
    ),
)
RETRYING = PendingJob(
    id="01796070000000000002-5e6f7a8b",
    state="retrying",
    excerpt="Why does the CI job time out?",
    created="2026-11-30T11:59:40Z",
    attempt=2,
    max_attempts=3,
    next_try_at="2026-11-30T12:00:04Z",
    reason="extract request failed: 529 overloaded",
)
FAILED = PendingJob(
    id="01796070000000000003-9c0d1e2f",
    state="failed",
    excerpt="Please remember that the staging DB is read-only",
    created="2026-11-30T11:20:00Z",
    attempt=3,
    max_attempts=3,
    reason="extract request failed: 401 invalid x-api-key (3 attempts)",
)
APPLIED = PendingJob(
    id="01796070000000000000-aaaabbbb",
    state="applied",
    excerpt="Add a Makefile target for the docs",
    created="2026-11-30T11:45:00Z",
    counts=(1, 1, 0),
    ops=(
        PendingOp(
            index=0,
            action="create",
            level="project",
            type="",
            title="Docs are built with mkdocs",
            summary="",
            filename="project_knowledge_docs-are-built-with-mkdocs.md",
            status="applied",
        ),
        PendingOp(
            index=1,
            action="update",
            level="project",
            type="",
            title="Build workflow",
            summary="",
            filename="project_knowledge_build-workflow.md",
            status="applied",
        ),
    ),
)
ORPHAN = PendingJob(
    id="01796060000000000009-deadbeef",
    state="orphaned",
    excerpt="Rename the old service",
    created="2026-11-28T09:00:00Z",
    workspace="/home/ann/src/old-service",
    reason="its workspace /home/ann/src/old-service no longer exists",
)
PENDING_STATE = PendingState(jobs=(HELD, RETRYING, FAILED, APPLIED, ORPHAN), mode="review")


def _card(
    level: str, type_: str, title: str, summary: str, body: str, updated: str, source: str, **kw: object
) -> CardRow:
    slug = title.lower().replace(" ", "-")[:40]
    return CardRow(
        level=level,
        filename=f"{type_}_{slug}.md",
        type=type_,
        title=title,
        summary=summary,
        updated=updated,
        source=source,
        body=body,
        sha256="0" * 64,
        **kw,
    )  # type: ignore[arg-type]


CARD_ROWS = (
    _card(
        "project",
        "project_knowledge",
        "Build workflow",
        "make build, then make test",
        "Run `make build` then `make test` from the repository root.\n\n"
        "## Releases\n\n- `make release`, from **main** only\n- CI tags `vX.Y.Z`\n",
        "2026-11-30T11:50:00Z",
        "model",
    ),
    _card(
        "project",
        "reference_material",
        "CI dashboard",
        "grafana board ci-main",
        "The CI dashboard is https://grafana.example.com/d/ci-main.",
        "2026-11-29T08:10:00Z",
        "manual",
    ),
    _card(
        "project",
        "correction_feedback",
        "Integration tests use the fake server",
        "never mock the SDK in integration tests",
        "Use tests/fakeapi.py; mocks hide wire bugs.",
        "2026-11-27T16:00:00Z",
        "model",
    ),
    _card(
        "user",
        "user_preference",
        "Answers in English",
        "even when asked in French",
        "Always answer in English.",
        "2026-11-20T10:00:00Z",
        "manual",
    ),
    _card(
        "user",
        "user_preference",
        "Short answers, code first",
        "no preamble",
        "Lead with the code; explain after, briefly.",
        "2026-11-18T10:00:00Z",
        "model",
    ),
    _card(
        "user",
        "correction_feedback",
        "No emojis in commit messages",
        "",
        "Commit messages are plain text.",
        "2026-11-02T10:00:00Z",
        "manual",
    ),
)


class ScreenHost(App[None]):
    """A bare app with the App's stylesheet; the memory screen is pushed over a placeholder."""

    CSS_PATH = APP_CSS  # type: ignore[assignment]

    def compose(self) -> ComposeResult:
        yield Static("chat")


EDITOR_DRAFT = CardDraft(
    level="project",
    type="project_knowledge",
    title="",
    summary="make release, from main only",
    body="Releases are cut with `make release`, from **main** only.\n\nCI tags the commit `vX.Y.Z`.\n",
)
MINE = CardDraft(
    level="project",
    type="project_knowledge",
    title="Build workflow",
    summary="make build, make test",
    body="Run `make build` then `make test`.\n\nUse `make -j8` on the build machines.\n",
)
DISK = CardDraft(
    level="project",
    type="project_knowledge",
    title="Build workflow",
    summary="make build, then make test",
    body="Run `make build` then `make test`.\n\nThe build needs Go 1.23.\n",
)


def pending_screen() -> PendingScreen:
    return PendingScreen(PENDING_STATE, clock=fixed_now)


def card_browser() -> CardBrowser:
    return CardBrowser(CARD_ROWS)


def editor_with_error() -> CardEditor:
    return CardEditor(EDITOR_DRAFT, heading="New card")


def editor_for_conflict() -> CardEditor:
    return CardEditor(MINE, filename="project_knowledge_build-workflow.md", sha256="1" * 64)


def conflict_modal() -> ConflictModal:
    return ConflictModal(MINE, DISK, where="project/project_knowledge_build-workflow.md")

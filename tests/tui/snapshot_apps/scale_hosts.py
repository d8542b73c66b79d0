"""Fixed states for the memory-at-scale snapshots: the panel with the split, the card
browser filtered to the cards not in the prompt (a pinned one among them), the pending screen with
a consolidation job and its diff. No clock, disk or network."""

from __future__ import annotations

from tests.tui.snapshot_apps.memory_hosts import fixed_now
from widgets.cards.browser import CardBrowser
from widgets.cards.card_list import CardRow
from widgets.panel.memory_panel import PanelCard, PanelJob, PanelState
from widgets.pending.screen import PendingScreen
from widgets.pending.state import PendingJob, PendingOp, PendingState

SPLIT_PANEL = PanelState(
    project=(
        PanelCard(
            "project_knowledge",
            "Build with make",
            "make build builds; make test runs the suite",
            "project_knowledge_build.md",
        ),
        PanelCard(
            "correction_feedback",
            "Never force-push main",
            "use --force-with-lease on branches",
            "correction_feedback_force_push.md",
        ),
        PanelCard(
            "reference_material",
            "API docs live in docs/api",
            "the OpenAPI file is docs/api/openapi.yaml",
            "reference_material_api_docs.md",
        ),
    ),
    user=(
        PanelCard(
            "user_preference",
            "Prefers short answers",
            "answer briefly, code first, no preamble",
            "user_preference_short.md",
        ),
    ),
    cut_note="312 cards not in the prompt",
    project_note=None,
    jobs=(PanelJob("job-1", "held for review · consolidate the project store: 3 clusters, 8 cards"),),
)


def _row(
    title: str,
    summary: str,
    *,
    in_prompt: bool,
    pinned: bool = False,
    type_: str = "project_knowledge",
    level: str = "project",
) -> CardRow:
    slug = title.lower().replace(" ", "-")[:40]
    return CardRow(
        level=level,
        filename=f"{type_}_{slug}.md",
        type=type_,
        title=title,
        summary=summary,
        updated="2026-11-20T10:00:00Z",
        source="model",
        body=f"{title}.\n\n{summary}.",
        sha256="0" * 64,
        in_prompt=in_prompt,
        pinned=pinned,
    )


BROWSER_ROWS = (
    _row("Build with make", "make build, then make test", in_prompt=True, pinned=True),
    _row("Never force-push main", "use --force-with-lease", in_prompt=True, type_="correction_feedback"),
    _row("Frobnicator calibration", "calibrate before each release", in_prompt=False),
    _row(
        "Gazetteer import format",
        "one place per line, tab separated",
        in_prompt=False,
        type_="reference_material",
    ),
    _row("Kubelet flags on CI", "the CI nodes run with --max-pods=30", in_prompt=False),
    _row("Quaternion helpers", "normalise before multiplying", in_prompt=False, pinned=True),
    _row(
        "Answers in English",
        "even when asked in French",
        in_prompt=True,
        type_="user_preference",
        level="user",
    ),
    _row(
        "Telemetry opt-out",
        "PSEUDO_TELEMETRY=0 in CI",
        in_prompt=False,
        type_="user_preference",
        level="user",
    ),
)

KEEP_BEFORE = """\
title: Use pnpm, not npm
summary: pnpm for installs
type: project_knowledge

This project uses pnpm for installs; npm breaks the lockfile."""

KEEP_AFTER = """\
title: Use pnpm, not npm
summary: pnpm for installs
type: project_knowledge

The project installs with pnpm only (`pnpm install`); npm breaks the pnpm lockfile."""

GONE_BEFORE = """\
title: Package manager is pnpm
summary: Package manager is pnpm
type: project_knowledge

Use pnpm install, never npm: npm breaks the pnpm lockfile."""

CONSOLIDATION = PendingJob(
    id="01796070000000000009-9f8e7d6c",
    state="held",
    excerpt="consolidate the project store: 1 cluster, 3 cards",
    title="Consolidation · project store · 1 cluster, 3 cards",
    created="2026-11-30T11:59:00Z",
    ops=(
        PendingOp(
            index=0,
            action="update",
            level="project",
            type="project_knowledge",
            title="Use pnpm, not npm",
            summary="pnpm for installs",
            filename="project_knowledge_use-pnpm.md",
            status="held",
            before=KEEP_BEFORE,
            after=KEEP_AFTER,
        ),
        PendingOp(
            index=1,
            action="delete",
            level="project",
            type="project_knowledge",
            title="Package manager is pnpm",
            summary="Package manager is pnpm",
            filename="project_knowledge_pnpm.md",
            status="held",
            before=GONE_BEFORE,
        ),
        PendingOp(
            index=2,
            action="delete",
            level="project",
            type="project_knowledge",
            title="pnpm only",
            summary="pnpm only",
            filename="project_knowledge_pnpm-only.md",
            status="held",
            before="title: pnpm only\nsummary: pnpm only\ntype: project_knowledge\n\n"
            "The project installs with pnpm; npm would break the lockfile.",
        ),
    ),
)


def browser_not_in_prompt() -> CardBrowser:
    return CardBrowser(BROWSER_ROWS)


def consolidation_screen() -> PendingScreen:
    return PendingScreen(PendingState(jobs=(CONSOLIDATION,), mode="review"), clock=fixed_now)

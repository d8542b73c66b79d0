"""What the way to the first frame and to the trust window does without (fig_startup, fig_bigstore):
no garbage collection before the first frame, no `memory` command's module, no importlib.resources,
and the trust window drawn before the stores' modules (pydantic, YAML) are loaded."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakeapi import FakeAnthropic
from tests.tui.conftest import wait_until
from widgets.dialogs.trust_modal import TrustModal

ROOT = Path(__file__).resolve().parents[2]

# `pseudoclaude` on a terminal, as the command line runs it (main → run_app → App.run), headless.
_CLI_PROBE = textwrap.dedent(
    """
    import gc, sys
    import textual.app
    from app.cli.main import main

    seen = {}
    run = textual.app.App.run

    def headless_run(self, *args, **kwargs):
        after = self._after_first_frame

        def first_frame():
            seen["collector_at_first_frame"] = gc.isenabled()
            seen["loaded_at_first_frame"] = sorted(
                m for m in ("app.cli.memory.commands", "memory.text.redact", "importlib.resources", "zipfile")
                if m in sys.modules)
            after()
            seen["collector_after_first_frame"] = gc.isenabled()
            seen["start_up_frozen"] = gc.get_freeze_count() > 0
            self.exit()

        self._after_first_frame = first_frame
        return run(self, headless=True, size=(100, 30))

    textual.app.App.run = headless_run
    sys.stdin.isatty = sys.stdout.isatty = lambda: True
    seen["collector_before"] = gc.isenabled()
    main(["-C", sys.argv[1]])
    seen["collector_after_the_app"] = gc.isenabled()
    print(seen)
    """
)


def test_the_first_frame_runs_no_collection_and_loads_no_memory_command(ws: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    proc = subprocess.run(
        [sys.executable, "-c", _CLI_PROBE, str(ws)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = eval(proc.stdout.strip().splitlines()[-1])  # a dict printed by the probe
    assert seen == {
        "collector_before": True,
        "collector_at_first_frame": False,  # held from the command line (app.tui.chat.gc_hold)
        "loaded_at_first_frame": [],
        "collector_after_first_frame": True,
        "start_up_frozen": True,
        "collector_after_the_app": True,
    }


def test_the_collector_comes_back_when_the_app_ends_before_its_first_frame(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.tui.run_app
    from app.cli.main import main

    held: list[bool] = []

    def failing_run_app(settings: object, workspace: Path, *, resume: object, continue_latest: bool) -> int:
        held.append(not gc.isenabled())
        raise RuntimeError("no terminal after all")

    monkeypatch.setattr(app.tui.run_app, "run_app", failing_run_app)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        main(["-C", str(ws)])
    assert held == [True] and gc.isenabled()


def test_memory_commands_still_parse_when_the_command_line_names_them(ws: Path, capsys: Any) -> None:
    from app.cli.main import build_parser, main

    assert main(["-C", str(ws), "memory", "index"]) == 0
    help_text = build_parser(memory_commands=False).format_help()
    assert "memory" in help_text and help_text == build_parser().format_help()


async def test_the_trust_window_is_drawn_before_the_stores_are_loaded(make_app, ws: Path) -> None:
    folder = ws / ".PseudoClaude" / "memory"  # a store that came with a clone
    folder.mkdir(parents=True)
    (folder / "project_knowledge_deploy.md").write_text(
        "---\ntitle: Deploy on Fridays\nsummary: ok\ntype: project_knowledge\n"
        "created: '2026-01-01T00:00:00Z'\n"
        "updated: '2026-01-01T00:00:00Z'\nsource: manual\n---\nBody.\n"
    )
    app = make_app()
    first_load: list[bool] = []
    load = app.bridge.trust.stores

    def trust_stores() -> Any:
        if not first_load:
            first_load.append(isinstance(app.screen, TrustModal) and app.screen.is_mounted)
        return load()

    app.bridge.trust.stores = trust_stores  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TrustModal), what="the trust window")
        await wait_until(pilot, lambda: bool(first_load), what="the stores loaded")
        assert first_load == [True]
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, TrustModal) and app.screen.cards is not None,
            what="the cards listed",
        )


async def test_no_trust_window_and_a_connection_for_a_store_that_needs_none(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.state.phase.ready, what="connected")
        assert not isinstance(app.screen, TrustModal) and not app.startup.trust.pending

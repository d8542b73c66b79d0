"""Test hygiene shared by every test: a private HOME and PSEUDOCLAUDE_HOME, no ANTHROPIC_* leaking in."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support.fakeapi import FakeAnthropic

# CI and local runs alike: no per-example deadline (2 noisy cores), a fixed seed in CI.
settings.register_profile(
    "ci", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("home")
    pc_home = home / ".PseudoClaude"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PSEUDOCLAUDE_HOME", str(pc_home))
    # No machine-wide git identity either: a card's `author` comes from the test's own git config.
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for key in list(os.environ):
        if key.startswith("ANTHROPIC_") or (key.startswith("PSEUDOCLAUDE_") and key != "PSEUDOCLAUDE_HOME"):
            if key == "PSEUDOCLAUDE_STRESS_KILLS":
                continue
            monkeypatch.delenv(key, raising=False)
    # The memory worker runs in the test's own process unless a test asks for the child process
    # (tests/integration/worker): a child per app would import the SDK (seconds of CPU) each time.
    monkeypatch.setenv("PSEUDOCLAUDE_MEMORY_WORKER", "thread")
    # pytest-xdist's workers export COLUMNS=80 and LINES=24: a terminal program started by a test
    # (the app in tmux) would take them over its real terminal's size.
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    yield pc_home


# The fake Messages API and a git workspace: shared by the integration and the app (tui) tests.
@pytest.fixture
def server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake
    assert not fake.errors, fake.errors[0]


@pytest.fixture
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A git work tree (a folder with .git) holding a README; under ``plain_ws``, an empty folder."""
    if request.node.get_closest_marker("plain_ws"):
        return request.getfixturevalue("plain_ws")
    w = tmp_path / "repo"
    (w / ".git").mkdir(parents=True)
    (w / "README.md").write_text("# demo\nThe build command is `make build`.\n")
    return w


@pytest.fixture
def plain_ws(tmp_path: Path) -> Path:
    """An empty workspace folder, by its real path (what resolve_workspace gives)."""
    d = tmp_path / "ws"
    d.mkdir()
    return Path(os.path.realpath(d))

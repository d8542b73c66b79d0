"""Fixtures shared by the integration tests: the fake Messages API and a git workspace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakeapi import FakeAnthropic


@pytest.fixture
def server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake
    assert not fake.errors, fake.errors[0]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A git work tree (a folder with .git) holding a README."""
    w = tmp_path / "repo"
    (w / ".git").mkdir(parents=True)
    (w / "README.md").write_text("# demo\nThe build command is `make build`.\n")
    return w

"""The sharing service (app/services/sharing.py): the cards' history of a store in git, the user
store's sync with its outcome kept as data, and MEMORY.md rebuilt after an outside change
without ever raising."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import Settings
from app.services.sharing import GitCancel, SharingService, SyncResult
from memory.constants import MANUAL_SOURCE, Level
from memory.store.store import StoreError
from memory.store.stores import MemoryStores
from tests.support.gittools import commit_all, git, new_repo
from tests.support.memtools import create, trust_workspace, write_note

CARD = "project_knowledge_deploy.md"


def _stores(tmp_path: Path) -> MemoryStores:
    ws = new_repo(tmp_path / "ws")
    trust_workspace(ws)
    return MemoryStores(os.path.realpath(ws))


async def test_the_log_of_a_store_in_git_holds_the_apps_batches_and_the_commits_newest_first(
    tmp_path: Path,
) -> None:
    stores = _stores(tmp_path)
    result = stores.apply(
        [(0, create("project", "Deploy", "deploy from the tag"))], source=MANUAL_SOURCE, label="seed"
    )
    [applied] = result.applied
    commit_all(stores.paths.workspace, "cards: deploy")
    write_note(stores, Level.PROJECT, "project_knowledge_other.md", "Other", "by hand")
    commit_all(stores.paths.workspace, "cards: other")
    service = SharingService(stores, None)  # the log reads no setting

    history = await service.log()
    assert [(e.kind, e.head) for e in history.entries] == [
        ("commit", "cards: other"),
        ("commit", "cards: deploy"),
        ("batch", "seed"),
    ]
    assert history.problems == ()
    assert history.entries[0].level is Level.PROJECT

    one_card = await service.log(Level.PROJECT, applied.filename)
    assert [e.head for e in one_card.entries] == ["cards: deploy", "seed"]
    assert [e.head for e in (await service.log("project", limit=1)).entries] == ["cards: other"]
    assert (await service.log(Level.USER)).entries == ()  # the user store is in no repository


async def test_the_log_refuses_a_filename_that_cannot_name_a_card(tmp_path: Path) -> None:
    service = SharingService(_stores(tmp_path), None)
    with pytest.raises(ValueError, match=r"\S"):
        await service.log(Level.PROJECT, "../outside.md")


async def test_refresh_indexes_rebuilds_memory_md_from_cards_changed_outside(tmp_path: Path) -> None:
    stores = _stores(tmp_path)
    stores.apply([(0, create("project", "Deploy", "deploy from the tag"))], source=MANUAL_SOURCE)
    write_note(stores, Level.PROJECT, "project_knowledge_by-hand.md", "By hand", "written in an editor")
    index = stores.project.dir / "MEMORY.md"
    assert "By hand" not in index.read_text(encoding="utf-8")
    service = SharingService(stores, Settings())

    assert await service.refresh_indexes() == ["project"]
    assert "By hand" in index.read_text(encoding="utf-8")
    assert await service.refresh_indexes() == []  # in step now: nothing rebuilt


@pytest.mark.parametrize(
    "error", [StoreError("project store: MEMORY.md is a symlink"), OSError(13, "denied")]
)
async def test_refresh_indexes_never_raises_and_logs_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    stores = _stores(tmp_path)
    seen: list[float] = []

    def broken(timeout: float = 0.0) -> list[Level]:
        seen.append(timeout)
        raise error

    monkeypatch.setattr(stores, "refresh_indexes", broken)
    with caplog.at_level(logging.WARNING, logger="app.services.sharing"):
        assert await SharingService(stores, None).refresh_indexes(timeout=0.5) == []
    assert seen == [0.5]
    assert "memory index not refreshed" in caplog.text


def test_without_a_remote_no_sync_runs_and_the_line_names_the_config_file(tmp_path: Path) -> None:
    stores = _stores(tmp_path)
    for service in (SharingService(stores, Settings()), SharingService(stores, None)):
        assert service.remote == ""
        missing = service.remote_missing()
        assert missing is not None and str(stores.paths.config_file) in missing and "\n" not in missing
    assert SharingService(stores, Settings(user_memory_remote="/srv/memory.git")).remote_missing() is None


class Recorded:
    """A sync function of ``sync_user_store``'s shape that records its calls."""

    def __init__(self, result: SyncResult | Exception) -> None:
        self.result = result
        self.calls: list[dict[str, Any]] = []

    def __call__(
        self, stores: MemoryStores, remote: str, *, timeout: float, cancel: Any = None, **kw: Any
    ) -> SyncResult:
        self.calls.append({"stores": stores, "remote": remote, "timeout": timeout, "cancel": cancel, **kw})
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def test_a_sync_function_set_by_a_test_is_called_and_its_outcome_kept(tmp_path: Path) -> None:
    stores = _stores(tmp_path)
    service = SharingService(stores, Settings(user_memory_remote="/srv/memory.git"))
    assert service.sync_status is None
    fake = service.sync_user_store = Recorded(SyncResult(ok=False, line="memory sync: offline"))
    cancel = GitCancel()

    result = service.sync(timeout=4.0, cancel=cancel)
    assert result == SyncResult(ok=False, line="memory sync: offline")
    assert service.last_sync is result and service.sync_status == ("memory sync: offline", True)
    assert fake.calls == [{"stores": stores, "remote": "/srv/memory.git", "timeout": 4.0, "cancel": cancel}]
    service.sync(accept_rewrite=True)
    assert fake.calls[-1]["accept_rewrite"] is True and fake.calls[-1]["timeout"] == 60.0


def test_a_sync_that_raises_is_a_failed_outcome_not_an_exception(tmp_path: Path) -> None:
    service = SharingService(_stores(tmp_path), Settings(user_memory_remote="/srv/memory.git"))
    service.sync_user_store = Recorded(RuntimeError("a bug"))
    result = service.sync()
    assert (result.ok, result.line) == (False, "user store not synced: RuntimeError: a bug")
    assert service.sync_status == (result.line, True)


def test_a_real_sync_pushes_the_user_store_to_a_local_bare_remote(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(
        ["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True, capture_output=True
    )
    stores = _stores(tmp_path)
    write_note(stores, Level.USER, "user_preference_tabs.md", "Tabs", "indent with tabs", summary="tabs")
    service = SharingService(stores, Settings(user_memory_remote=str(remote)))

    result = service.sync()
    assert result.ok, result.line
    assert service.sync_status == (result.line, False)
    assert "user_preference_tabs.md" in git(remote, "ls-tree", "-r", "--name-only", "main").split()

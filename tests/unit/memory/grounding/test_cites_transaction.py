"""An op's ``cites`` through validation and the transaction (memory/store/ops.py, transaction.py):
kept ones recorded with the app's own content ids, every dropped one a reason on the batch and
in its history entry, and the op applied whatever its citations were."""

from __future__ import annotations

import json
from pathlib import Path

from memory.constants import MANUAL_SOURCE
from memory.extract.parser import parse_and_validate
from memory.grounding.staleness import MAX_CITES
from memory.model import BatchResult
from memory.store.stores import MemoryStores
from tests.support.memtools import create, op
from tests.unit.memory.grounding.conftest import cited_card, git

FAKE = "0123456789abcdef0123456789abcdef01234567"


def _apply_json(stores: MemoryStores, ops: list[dict[str, object]]) -> BatchResult:
    """Ops as a model (or ``memory apply``) writes them: text, parsed and validated."""
    parsed = parse_and_validate(json.dumps(ops))
    assert not parsed.rejected, parsed.rejected
    return stores.apply(parsed.ops, source="auto", rejected=parsed.rejected, label="test")


def _new(**extra: object) -> dict[str, object]:
    return {
        "action": "create",
        "level": "project",
        "type": "project_knowledge",
        "title": "Build",
        "summary": "make all",
        "content": "Run make all.",
        **extra,
    }


def _cites(stores: MemoryStores, name: str, level: str = "project") -> list[tuple[str, str | None, str]]:
    return [(c.path, c.lines, c.blob) for c in stores.read_note(level, name).meta.cites]


def test_kept_cites_carry_real_ids_and_a_model_given_blob_is_ignored(
    stores: MemoryStores, repo: Path
) -> None:
    (repo / "notes.txt").write_text("n\n")
    result = _apply_json(
        stores,
        [
            _new(
                cites=[
                    {"path": "Makefile", "lines": "1-2", "blob": FAKE},
                    "src/app.py:3",
                    {"path": "notes.txt", "blob": FAKE},
                ]
            )
        ],
    )
    assert result.dropped_cites == []
    name = result.applied[0].filename
    got = _cites(stores, name)
    assert got[:2] == [
        ("Makefile", "1-2", git(repo, "hash-object", "Makefile").strip()),
        ("src/app.py", "3", git(repo, "hash-object", "src/app.py").strip()),
    ]
    assert got[2][2].startswith("sha256:")
    assert FAKE not in (stores.project.dir / name).read_text()


def test_an_operation_object_given_a_blob_is_recorded_with_the_real_id(
    stores: MemoryStores, repo: Path
) -> None:
    name = cited_card(stores, {"path": "Makefile", "blob": FAKE})
    assert _cites(stores, name) == [("Makefile", None, git(repo, "hash-object", "Makefile").strip())]


def test_user_level_cites_are_dropped_with_the_reason(stores: MemoryStores) -> None:
    result = stores.apply(
        [(0, create("user", "Style", "Tabs.", type_="user_preference", cites=("Makefile", "../x")))],
        source=MANUAL_SOURCE,
    )
    assert [a.level for a in result.applied] == ["user"]
    assert [(d.cite, d.reason) for d in result.dropped_cites] == [
        ("Makefile", "a user card is shared by every workspace: citations are kept on project cards only"),
        ("../x", "a user card is shared by every workspace: citations are kept on project cards only"),
    ]
    assert stores.read_note("user", result.applied[0].filename).meta.cites == ()


def test_an_update_keeps_removes_or_replaces_the_cites(stores: MemoryStores, repo: Path) -> None:
    name = cited_card(stores, "Makefile")
    made = _cites(stores, name)

    def update(**kw: object) -> None:
        r = stores.apply(
            [(0, op("update", "project", filename=name, content="New body.", **kw))], source=MANUAL_SOURCE
        )
        assert r.applied and not r.rejected, r

    update()
    assert _cites(stores, name) == made
    update(cites=("src/app.py:1-4",))
    assert [(p, lines) for p, lines, _ in _cites(stores, name)] == [("src/app.py", "1-4")]
    update(cites=())
    assert _cites(stores, name) == []
    assert "cites:" not in (stores.project.dir / name).read_text()


def test_a_merged_update_from_a_model_without_cites_keeps_them(stores: MemoryStores) -> None:
    name = cited_card(stores, "Makefile")
    made = _cites(stores, name)
    _apply_json(stores, [{"action": "update", "level": "project", "filename": name, "content": "Merged."}])
    assert _cites(stores, name) == made
    _apply_json(
        stores, [{"action": "update", "level": "project", "filename": name, "content": "x", "cites": []}]
    )
    assert _cites(stores, name) == []


def test_dropped_cites_are_on_the_result_and_in_the_history(stores: MemoryStores) -> None:
    result = _apply_json(stores, [_new(cites=["Makefile", "../outside", "/etc/passwd", ".git/config"])])
    assert [d.cite for d in result.dropped_cites] == ["../outside", "/etc/passwd", ".git/config"]
    assert all(d.index == 0 and "\n" not in d.reason for d in result.dropped_cites)
    assert "leaves the workspace" in result.dropped_cites[0].reason
    assert "absolute path" in result.dropped_cites[1].reason
    assert "inside .git/" in result.dropped_cites[2].reason
    entry = stores.history()[-1]
    assert entry.txid == result.txid and entry.dropped_cites == result.dropped_cites
    assert [c.path for c in stores.read_note("project", result.applied[0].filename).meta.cites] == [
        "Makefile"
    ]


def test_more_than_twenty_cites_drop_the_rest_with_a_reason(stores: MemoryStores, repo: Path) -> None:
    for i in range(MAX_CITES + 5):
        (repo / f"f{i:02d}.txt").write_text(f"{i}\n")
    result = _apply_json(stores, [_new(cites=[f"f{i:02d}.txt" for i in range(MAX_CITES + 5)])])
    assert len(stores.read_note("project", result.applied[0].filename).meta.cites) == MAX_CITES
    assert [d.cite for d in result.dropped_cites] == [
        f"f{i:02d}.txt" for i in range(MAX_CITES, MAX_CITES + 5)
    ]
    assert all(d.reason.endswith(f"a card keeps at most {MAX_CITES} citations") for d in result.dropped_cites)


def test_weird_cites_are_dropped_with_reasons_and_the_op_still_applies(stores: MemoryStores) -> None:
    result = _apply_json(
        stores,
        [
            _new(
                cites=[
                    7,
                    1.5,
                    True,
                    None,
                    ["Makefile"],
                    {"path": 3},
                    {"lines": "1-2"},
                    {"path": "Makefile", "lines": [1]},
                    {"path": "Makefile", "lines": "x"},
                    {"path": "Makefile", "lines": {"a": 1}},
                    "Makefile:0",
                    "Makefile",
                ]
            )
        ],
    )
    assert len(result.applied) == 1 and not result.rejected
    reasons = [d.reason for d in result.dropped_cites]
    assert reasons[:7] == [
        "a citation must be a path string, got a number",
        "a citation must be a path string, got a number",
        "a citation must be a path string, got a boolean",
        "a citation must be a path string, got null",
        "a citation must be a path string, got an array",
        "a citation object needs a string path",
        "a citation object needs a string path",
    ]
    assert reasons[7:10] == [
        "'Makefile': lines must be like 10-40",
        "'Makefile:x': lines must be like 10-40",
        "'Makefile': lines must be like 10-40",
    ]
    assert "does not exist" in reasons[10]
    assert [c.spec for c in stores.read_note("project", result.applied[0].filename).meta.cites] == [
        "Makefile"
    ]


def test_a_cites_value_that_is_not_a_list_is_one_citation(stores: MemoryStores) -> None:
    for value, kept in (
        ("Makefile", ["Makefile"]),
        ({"path": "Makefile", "lines": "1-2"}, ["Makefile:1-2"]),
        (42, []),
    ):
        result = _apply_json(stores, [_new(title=f"Build {value!r}", cites=value)])
        assert len(result.applied) == 1
        assert [c.spec for c in stores.read_note("project", result.applied[0].filename).meta.cites] == kept
        assert [d.reason for d in result.dropped_cites] == (
            [] if kept else ["a citation must be a path string, got a number"]
        )


def test_a_lone_surrogate_from_json_is_dropped_not_raised(stores: MemoryStores) -> None:
    parsed = parse_and_validate(
        '[{"action": "create", "level": "project", "type": "project_knowledge", '
        '"title": "T", "content": "c", "cites": ["src/\\ud800.py", "Makefile"]}]'
    )
    result = stores.apply(parsed.ops, source="auto", rejected=parsed.rejected)
    assert len(result.applied) == 1
    assert [c.path for c in stores.read_note("project", result.applied[0].filename).meta.cites] == [
        "Makefile"
    ]
    assert len(result.dropped_cites) == 1 and "\ud800" not in result.dropped_cites[0].reason

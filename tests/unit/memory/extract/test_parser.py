"""memory.extract.parser and memory.store.ops: finding the operations in a model's answer and
validating each op alone."""

from __future__ import annotations

import json
import re
import time

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memory.constants import MAX_CONTENT_BYTES, MAX_OPS, Action, Level, NoteType
from memory.extract.parser import (
    MAX_INPUT_CHARS,
    MAX_JSON_CANDIDATES,
    ParseResult,
    extract_operations,
    parse_and_validate,
)
from memory.model import Operation
from memory.store.ops import IndexedOp, validate_operations

CREATE = {
    "action": "create",
    "level": "project",
    "type": "project_knowledge",
    "title": "Build workflow",
    "summary": "Run Go tests before release.",
    "content": "Run `go test ./...` before tagging.",
}
UPDATE = {
    "action": "update",
    "level": "user",
    "filename": "user_preference_lang.md",
    "content": "Answer in Chinese.",
}
DELETE = {"action": "delete", "level": "project", "filename": "project_knowledge_old.md"}
OPS = [CREATE, UPDATE, DELETE]
ARRAY = json.dumps(OPS)

# -- extract_operations ------------------------------------------------------------------


def test_plain_array() -> None:
    assert extract_operations(ARRAY) == OPS


def test_operations_object() -> None:
    assert extract_operations(json.dumps({"operations": OPS})) == OPS


def test_empty_array_means_nothing_to_save() -> None:
    assert extract_operations("[]") == []
    assert extract_operations("Nothing worth keeping.\n[]\n") == []
    assert extract_operations('{"operations": []}') == []


def test_code_fence() -> None:
    assert extract_operations(f"```json\n{ARRAY}\n```") == OPS


def test_prose_before_and_after() -> None:
    text = f"Here are the operations:\n{ARRAY}\nI created one note [see above] {{ok}}."
    assert extract_operations(text) == OPS


def test_brackets_inside_strings() -> None:
    ops = [dict(CREATE, title="Use [brackets] and {braces}", content='a "]" b [[ }} \\" ]')]
    assert extract_operations("x " + json.dumps(ops) + " y ]") == ops


@pytest.mark.parametrize(
    "lead", ["[turn 1]", "[note]", "[1, 2]", '["a"]', "{not json}", '{"a": 1}', "[[", "{"]
)
def test_leading_prose_bracket_is_skipped(lead: str) -> None:
    assert extract_operations(f"{lead} then {ARRAY} and [x]") == OPS


def test_array_with_a_stray_item_is_the_answer_and_the_item_rejected_alone() -> None:
    text = f'ops: [{json.dumps(CREATE)}, "not an object", 5] done'
    assert extract_operations(text) == [CREATE, "not an object", 5]
    result = parse_and_validate(text)
    assert [i for i, _ in result.ops] == [0]
    assert [r.index for r in result.rejected] == [1, 2]


def test_array_of_objects_without_action_is_not_the_answer() -> None:
    assert extract_operations('[{"a": 1}] [{}] then [{"action": "noop"}]') == [{"action": "noop"}]


def test_array_of_non_objects_is_not_the_answer() -> None:
    assert extract_operations('[1, "x"] then [{"action": "noop"}]') == [{"action": "noop"}]


def test_object_without_operations_is_skipped_but_inner_array_found() -> None:
    assert extract_operations(json.dumps({"result": OPS})) == OPS


def test_nothing_found() -> None:
    assert extract_operations("no json here [really] {none}") is None
    assert extract_operations("") is None


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_rejected(constant: str) -> None:
    bad = f'[{{"action": "create", "x": {constant}}}]'
    assert extract_operations(bad) is None
    assert extract_operations(bad + " " + ARRAY) == OPS


def test_input_capped_at_one_mib() -> None:
    assert extract_operations("x" * (MAX_INPUT_CHARS - 10) + ARRAY) is None
    assert extract_operations("x" * (MAX_INPUT_CHARS - len(ARRAY) - 1) + ARRAY) == OPS


def test_candidate_positions_bounded() -> None:
    assert extract_operations("[x " * MAX_JSON_CANDIDATES + ARRAY) is None
    assert extract_operations("[x " * (MAX_JSON_CANDIDATES - 10) + ARRAY) == OPS


def test_hostile_inputs_are_fast_and_safe() -> None:
    start = time.monotonic()
    assert extract_operations("[" * 200_000) is None
    assert extract_operations("[" * 5_000 + "1" + "]" * 5_000) is None
    assert extract_operations("[" * 900 + "1," * 300_000 + "1" + "]" * 900) is None
    assert extract_operations('["' + "a" * 900_000) is None
    assert extract_operations("[" * 900 + '"' + "a" * 1_000_000) is None  # unterminated string
    assert extract_operations("[" + "1" * 10_000 + "]") is None  # huge integer
    assert time.monotonic() - start < 15


# Prose full of JSON-ish characters; it must not itself hold an accepted array/object.
_PROSE = st.lists(
    st.sampled_from(
        [*"ab Z09[]{}\"':,.\n`#-\\", "é", "中", "😀", "```json\n", "[turn 1]", "true", "null", '"x"']
    ),
    max_size=40,
).map("".join)
_OPS = st.lists(
    st.fixed_dictionaries(
        {
            "action": st.sampled_from(["create", "update", "delete", "noop", "other"]),
            "level": st.sampled_from(["project", "user"]),
            "title": st.text(max_size=30),
            "content": st.text(max_size=50),
        }
    ),
    max_size=5,
)


@given(_PROSE, _OPS, st.booleans(), _PROSE)
def test_property_prose_around_the_answer(before: str, ops: list[dict], as_object: bool, after: str) -> None:
    payload = json.dumps({"operations": ops} if as_object else ops, ensure_ascii=False)
    # Exclude prose that already contains an acceptable answer ("[]", "[{...}]") or that
    # opens an array the answer would complete.
    assume(not re.search(r"\[\s*[{\]]", before + payload[:1]))
    assume("operations" not in before)
    assert extract_operations(before + payload + after) == ops


# -- validate_operations -----------------------------------------------------------------


def _one(item: object) -> tuple[list[IndexedOp], list[str]]:
    ops, rejected = validate_operations([item])
    return ops, [r.reason for r in rejected]


def test_valid_ops_come_back_with_their_index() -> None:
    ops, rejected = validate_operations(OPS)
    assert rejected == []
    assert [i for i, _ in ops] == [0, 1, 2]
    create = ops[0].op
    assert create == Operation(
        action=Action.CREATE,
        level=Level.PROJECT,
        type=NoteType.PROJECT_KNOWLEDGE,
        title="Build workflow",
        summary="Run Go tests before release.",
        content="Run `go test ./...` before tagging.",
    )
    assert ops[1].op.filename == "user_preference_lang.md" and ops[1].op.level == Level.USER
    assert ops[2].op.action == Action.DELETE and ops[2].op.content is None


def test_each_op_alone_valid_ones_still_apply() -> None:
    ops, rejected = validate_operations([{"action": "create"}, CREATE, 7, DELETE])
    assert [i for i, _ in ops] == [1, 3]
    assert [r.index for r in rejected] == [0, 2]


@pytest.mark.parametrize("item", [7, "create", None, [CREATE], True])
def test_item_must_be_an_object(item: object) -> None:
    ops, rejected = validate_operations([CREATE, item])
    assert len(ops) == 1
    assert rejected[0].index == 1
    assert rejected[0].reason.startswith("op 1: expected a JSON object")
    assert rejected[0].op is None


def test_unknown_action_is_named() -> None:
    _, reasons = _one({"action": "frobnicate", "level": "user"})
    assert reasons == ['op 0: unknown action "frobnicate" (expected create, update, delete or noop)']


def test_missing_action() -> None:
    _, reasons = _one({"level": "user"})
    assert reasons and "action" in reasons[0]


def test_noop_accepted_silently() -> None:
    ops, rejected = validate_operations([{"action": "noop"}, {"action": "noop", "level": "team", "title": 5}])
    assert ops == [] and rejected == []


def test_unknown_level_reason() -> None:
    ops, rejected = validate_operations([CREATE, CREATE, CREATE, dict(CREATE, level="team")])
    assert len(ops) == 3
    assert rejected[0].reason == 'op 3: unknown level "team" (expected project or user)'


def test_action_and_level_case_insensitive() -> None:
    ops, _ = _one(dict(CREATE, action="Create", level="USER", type="User_Preference"))
    assert ops[0].op.action == Action.CREATE and ops[0].op.level == Level.USER
    assert ops[0].op.type == NoteType.USER_PREFERENCE


@pytest.mark.parametrize(
    ("base", "field"),
    [
        (CREATE, "level"),
        (CREATE, "type"),
        (CREATE, "title"),
        (CREATE, "content"),
        (UPDATE, "level"),
        (UPDATE, "filename"),
        (UPDATE, "content"),
        (DELETE, "level"),
        (DELETE, "filename"),
    ],
)
def test_required_fields(base: dict, field: str) -> None:
    item = {k: v for k, v in base.items() if k != field}
    ops, reasons = _one(item)
    assert ops == []
    assert reasons[0].startswith(f"op 0: missing {field}")
    assert base["action"] in reasons[0]


def test_unknown_type() -> None:
    _, reasons = _one(dict(CREATE, type="todo"))
    assert reasons == [
        'op 0: unknown type "todo" (expected user_preference, correction_feedback, '
        "project_knowledge or reference_material)"
    ]


def test_title_empty_after_sanitizing_rejected_on_create() -> None:
    _, reasons = _one(dict(CREATE, title="## \x00\u202e \n"))
    assert reasons == ["op 0: title is empty"]


def test_update_optional_fields_validated_when_present() -> None:
    assert _one(dict(UPDATE, type="bogus"))[1][0].startswith('op 0: unknown type "bogus"')
    assert "title must be a string" in _one(dict(UPDATE, title=3))[1][0]
    assert "summary must be a string" in _one(dict(UPDATE, summary=["x"]))[1][0]
    ops, _ = _one(dict(UPDATE, title="# New\ntitle", summary="s", type="correction_feedback"))
    assert ops[0].op.title == "New title" and ops[0].op.type == NoteType.CORRECTION_FEEDBACK
    # An empty title on an update keeps the note's title.
    ops, _ = _one(dict(UPDATE, title=""))
    assert ops[0].op.title is None


def test_update_and_delete_ignore_fields_they_do_not_use() -> None:
    ops, _ = _one(dict(DELETE, content="x", title="t"))
    assert ops[0].op.content is None and ops[0].op.title is None
    ops, _ = _one(dict(CREATE, filename="../evil.md"))
    assert ops[0].op.filename is None


@pytest.mark.parametrize("field", ["level", "type", "title", "summary", "slug", "content", "action"])
@pytest.mark.parametrize("value", [1, 2.5, True, ["x"], {"a": "b"}])
def test_wrong_type_where_string_expected(field: str, value: object) -> None:
    ops, reasons = _one(dict(CREATE, **{field: value}))
    assert ops == []
    assert f"{field} must be a string" in reasons[0]


def test_null_optional_field_is_absent() -> None:
    ops, _ = _one(dict(CREATE, summary=None, slug=None))
    assert ops[0].op.summary is None and ops[0].op.slug is None


def test_content_limit_in_utf8_bytes() -> None:
    assert _one(dict(CREATE, content="x" * MAX_CONTENT_BYTES))[0]
    # Fewer characters than the limit, but more bytes.
    cjk = "中" * (MAX_CONTENT_BYTES // 3 + 1)
    assert len(cjk) < MAX_CONTENT_BYTES
    _, reasons = _one(dict(CREATE, content=cjk))
    assert reasons == [f"op 0: content is larger than {MAX_CONTENT_BYTES} bytes"]


def test_empty_content_rejected() -> None:
    assert _one(dict(CREATE, content="  \n"))[1] == ["op 0: content is empty"]


@pytest.mark.parametrize("field", ["title", "summary", "slug", "content", "filename", "level"])
def test_lone_surrogate_rejected(field: str) -> None:
    base = UPDATE if field == "filename" else CREATE
    ops, reasons = _one(dict(base, **{field: "ok\ud800"}))
    assert ops == []
    assert reasons == [f"op 0: {field} is not valid UTF-8 (lone surrogate)"]


def test_lone_surrogate_from_json_escape() -> None:
    result = parse_and_validate(json.dumps([dict(CREATE, content="a\udc80b")]))
    assert result.ops == [] and "lone surrogate" in result.rejected[0].reason
    # The stored copy of the rejected op is valid UTF-8.
    json.dumps(result.rejected[0].op, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("name", ["../x.md", "/etc/passwd", "MEMORY.md", "a/b.md", ".hidden.md", "x\x00.md"])
def test_filename_checked(name: str) -> None:
    for base in (UPDATE, DELETE):
        ops, reasons = _one(dict(base, filename=name))
        assert ops == [] and reasons[0].startswith("op 0: ")


def test_batch_limit() -> None:
    items = [dict(CREATE, title=f"t{i}") for i in range(MAX_OPS + 3)]
    ops, rejected = validate_operations(items)
    assert [i for i, _ in ops] == list(range(MAX_OPS))
    assert [r.index for r in rejected] == [MAX_OPS, MAX_OPS + 1, MAX_OPS + 2]
    for r in rejected:
        assert r.reason == f"op {r.index}: over the batch limit of {MAX_OPS} operations; not applied"
        assert r.op is not None and r.op["title"] == f"t{r.index}"


def test_noops_count_toward_the_batch_limit_position() -> None:
    items: list[object] = [{"action": "noop"}] * MAX_OPS + [CREATE]
    ops, rejected = validate_operations(items)
    assert ops == [] and rejected[0].index == MAX_OPS


def test_title_and_summary_sanitized() -> None:
    ops, _ = _one(
        dict(CREATE, title="# Build\n\u202eflow" + "x" * 200, summary="## one\ntwo\x00" + "y" * 300)
    )
    op = ops[0].op
    assert op.title is not None and op.title.startswith("Build flow") and len(op.title) == 100
    assert op.summary is not None and op.summary.startswith("one two") and len(op.summary) == 200


def test_title_summary_content_redacted() -> None:
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    ops, _ = _one(
        dict(CREATE, title=f"token {key}", summary=f"pw password=hunter2 {key}", content=f"use {key}\n")
    )
    op = ops[0].op
    assert op.title == "token [REDACTED:github_token]"
    assert op.summary == "pw password=[REDACTED:password] [REDACTED:github_token]"
    assert op.content == "use [REDACTED:github_token]\n"


def test_secret_hidden_by_zero_width_char_in_title_is_still_redacted() -> None:
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    hidden = key[:10] + "\u200b" + key[10:]
    ops, _ = _one(dict(CREATE, title=f"k {hidden}"))
    assert ops[0].op.title == "k [REDACTED:github_token]"


def test_slug_passed_through() -> None:
    ops, _ = _one(dict(CREATE, slug="My Slug!"))
    assert ops[0].op.slug == "My Slug!"


def test_rejected_op_is_truncated_and_redacted() -> None:
    item = dict(
        CREATE, level="team", content="z" * 5000, summary="password=hunter2", extra={"deep": {"er": {"x": 1}}}
    )
    _, rejected = validate_operations([item])
    op = rejected[0].op
    assert op is not None
    assert op["content"] == "z" * 200
    assert op["summary"] == "password=[REDACTED:password]"
    assert op["level"] == "team"
    json.dumps(op)


def test_reasons_are_one_line() -> None:
    items: list[object] = [
        dict(CREATE, level="te\nam"),
        dict(CREATE, action="x\ny"),
        dict(UPDATE, filename="a\nb.md"),
        dict(CREATE, type="\u202e" + "t" * 500),
    ]
    _, rejected = validate_operations(items)
    assert len(rejected) == 4
    for r in rejected:
        assert "\n" not in r.reason and "\u202e" not in r.reason and len(r.reason) < 400


# -- parse_and_validate ------------------------------------------------------------------


def test_parse_and_validate() -> None:
    text = (
        f"Sure:\n```json\n{json.dumps([CREATE, dict(DELETE, level='team'), {'action': 'noop'}])}\n```\nDone."
    )
    result = parse_and_validate(text)
    assert isinstance(result, ParseResult)
    assert result.found
    assert [(i, op.action) for i, op in result.ops] == [(0, Action.CREATE)]
    assert [r.index for r in result.rejected] == [1]


def test_parse_and_validate_not_found() -> None:
    result = parse_and_validate("I could not decide.")
    assert not result.found and result.ops == [] and result.rejected == []


def test_parse_and_validate_empty_answer_is_found() -> None:
    result = parse_and_validate("[]")
    assert result.found and result.ops == [] and result.rejected == []


def test_parse_result_roundtrips_as_json() -> None:
    result = parse_and_validate(ARRAY)
    again = ParseResult.model_validate_json(result.model_dump_json())
    assert again == result

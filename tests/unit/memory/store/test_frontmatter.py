"""Note files round-trip through the YAML front matter, whatever the title or body holds."""

from __future__ import annotations

import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memory.constants import Level, NoteType
from memory.model import NoteMeta
from memory.store.frontmatter import FrontMatterError, dump_note, parse_meta, split_note
from memory.store.noteparse import parse_note
from memory.text.names import sanitize_summary, sanitize_title

TRICKY = st.sampled_from(
    [
        "---",
        "--- x",
        "a: b",
        "key: 'v'",
        "#",
        "- item",
        "'",
        '"',
        "|",
        ">",
        "\n",
        " \n ",
        "…",
        "使用中文",
        "🚀",
        ": ",
        "{x}",
        "[y]",
        "&a",
        "*b",
        "!tag",
        "%",
        "@",
        "`",
    ]
)
TEXT = st.lists(st.one_of(TRICKY, st.text(max_size=12)), max_size=12).map("".join)


def _meta(title: str, summary: str, t: NoteType) -> NoteMeta:
    return NoteMeta(
        title=title,
        summary=summary,
        type=t,
        created="2026-11-30T04:32:46Z",
        updated="2026-11-30T05:00:00Z",
        source="sess-1",
    )


@given(title=TEXT, summary=TEXT, body=TEXT, t=st.sampled_from(list(NoteType)))
def test_round_trip_of_raw_values(title: str, summary: str, body: str, t: NoteType) -> None:
    # Raw values as a person might type them: newlines, '---', colons, quotes, CJK, emoji. Other
    # control characters never reach a note (titles and summaries are sanitized on write).
    if not title.strip() or any(0xD800 <= ord(c) <= 0xDFFF for c in title + summary + body):
        return
    if any((unicodedata.category(c) == "Cc" and c != "\n") or c in "\u2028\u2029" for c in title + summary):
        return
    data = dump_note(_meta(title, summary, t), body)
    fm, back = split_note(data.decode())
    assert fm["title"] == title and fm["summary"] == summary and fm["type"] == t.value
    assert fm["created"] == "2026-11-30T04:32:46Z"
    assert back == (body if not body or body.endswith("\n") else body + "\n")


@given(title=TEXT, summary=TEXT, body=TEXT)
def test_sanitized_titles_stay_one_line_through_a_store_read(title: str, summary: str, body: str) -> None:
    clean = sanitize_title(title)
    if not clean:
        return
    data = dump_note(_meta(clean, sanitize_summary(summary), NoteType.PROJECT_KNOWLEDGE), body)
    note = parse_note(Level.PROJECT, "project_knowledge_x.md", data)
    assert note.broken is None
    assert note.meta.title == clean and "\n" not in note.meta.title
    assert note.meta.summary == sanitize_summary(summary)


def test_timestamps_written_unquoted_by_hand_are_read_back_as_rfc3339() -> None:
    fm, _ = split_note("---\ntitle: T\ntype: user_preference\ncreated: 2026-11-30T04:32:46Z\n---\nbody\n")
    meta = parse_meta(fm)
    assert meta.created == "2026-11-30T04:32:46Z" and meta.source == "manual"


def test_broken_front_matter_reasons_are_one_line() -> None:
    for text, reason in [
        ("no front matter", "no front matter"),
        ("---\ntitle: x\n", "not closed"),
        ("---\n[a\n---\n", "not valid YAML"),
        ("---\n- a\n---\n", "not a mapping"),
    ]:
        try:
            split_note(text)
        except FrontMatterError as e:
            assert reason in str(e) and "\n" not in str(e)
        else:
            raise AssertionError(text)
    try:
        parse_meta({"title": "", "type": "project_knowledge"})
    except FrontMatterError as e:
        assert "no title" in str(e)


# The fast reader of simple heads (memory.frontmatter._simple_head) must read exactly what YAML
# reads, or hand the head to YAML: a value YAML would take as a number, date, bool or null, a
# quote left open, a comment, a colon — any of them read differently would change a note.
SCALARS = st.sampled_from(
    [
        "yes",
        "No",
        "on",
        "off",
        "true",
        "False",
        "null",
        "~",
        "Null",
        "NULL",
        "0",
        "-1",
        "+1",
        "1_000",
        "0x1F",
        "0o17",
        "1e3",
        "1.5",
        ".5",
        ".inf",
        "-.INF",
        ".nan",
        "2026-11-30",
        "2026-11-30T04:32:46Z",
        "2026-11-30 04:32:46",
        "12:30:00",
        "1:2",
        "<<",
        "=",
        "!!str x",
        "&anchor x",
        "*alias",
        "? x",
        "- x",
        "[a]",
        "{a: b}",
        "a #b",
        "a#b",
        "a: b",
        "a:b",
        "a:",
        " a",
        "a ",
        "'a'",
        "'a''b'",
        "'a'b'",
        "'",
        "''",
        '"a"',
        "`a`",
        "%x",
        "@x",
        "|",
        ">",
        "ça",
        "使用",
        "🚀",
        "a\tb",
        "#x",
        ",a",
        "a,b",
    ]
)
VALUES = st.one_of(
    SCALARS,
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=12),
    st.lists(SCALARS, min_size=1, max_size=3).map(" ".join),
)
LINES = st.lists(
    st.tuples(
        st.sampled_from(["title", "summary", "type", "created", "updated", "source", "confirmed"]), VALUES
    ),
    min_size=1,
    max_size=6,
).map(lambda kv: "".join(f"{k}: {v}\n" for k, v in kv))
# A ``cites:`` block list as dump_note writes it (and shapes near it: a key twice, an entry
# without its dash, an empty list, other indentation), to be read exactly as YAML reads it.
CITE_LINES = st.lists(
    st.tuples(
        st.sampled_from(["- ", "  ", "   ", "-  ", ""]),
        st.sampled_from(["path", "lines", "blob", "other"]),
        VALUES,
    ),
    max_size=6,
).map(lambda items: "cites:\n" + "".join(f"{lead}{k}: {v}\n" for lead, k, v in items))
HEADS = st.one_of(
    LINES, st.tuples(LINES, CITE_LINES, LINES).map("".join), st.tuples(CITE_LINES, LINES).map("".join)
)


@given(head=HEADS)
@settings(max_examples=400)
@example(head="title: a #b\n")
@example(head="summary: yes\n")
@example(head="title: 'it''s'\n")
@example(head="title: 'open\n")
@example(head="source: a: b\n")
@example(head="created: 2026-11-30\n")
@example(
    head="title: a\ncites:\n- path: Makefile\n  lines: 10-40\n  blob: sha256:ab\n"
    "confirmed: '2026-11-30T04:32:46Z'\n"
)
@example(head="title: a\ncites:\n- path: a\n  path: b\n")
@example(head="title: a\ncites:\n  path: a\n")
@example(head="title: a\ncites:\n")
@example(head="title: a\ncites:\n- lines: 12\n")
def test_the_fast_reader_of_simple_heads_reads_what_yaml_reads_or_leaves_it_to_yaml(head: str) -> None:
    import yaml

    from memory.store.frontmatter import YAML_LOADER, _simple_head

    fast = _simple_head(head)
    if fast is None:
        return
    assert fast == yaml.load(head, Loader=YAML_LOADER)


@given(title=TEXT, summary=TEXT, t=st.sampled_from(list(NoteType)))
def test_what_dump_note_writes_is_mostly_read_by_the_fast_reader(
    title: str, summary: str, t: NoteType
) -> None:
    from memory.store.frontmatter import _simple_head

    title, summary = sanitize_title(title) or "x", sanitize_summary(summary)
    data = dump_note(_meta(title, summary, t), "body").decode()
    head = data.split("---\n")[1]
    fast = _simple_head(head)
    if fast is not None:  # else YAML reads it (a value with a quote or a colon, say)
        assert fast["title"] == title and fast["summary"] == summary and fast["type"] == t.value


def test_a_cited_note_is_read_without_the_yaml_library() -> None:
    import yaml

    from memory.model import Cite
    from memory.store.frontmatter import YAML_LOADER, _simple_head

    cites = (
        Cite(path="Makefile", lines="10-40", blob="3b18e512dba79e4c8300dd08aeb37f8e728b8dad"),
        Cite(path="src/app.py", lines="12", blob="sha256:" + "ab" * 32),
        Cite(path="a b/c: d.py", blob="0" * 40),
    )
    meta = _meta("Build", "make all", NoteType.PROJECT_KNOWLEDGE).model_copy(
        update={"cites": cites, "confirmed": "2026-12-01T10:00:00Z"}
    )
    head = dump_note(meta, "body").decode().split("---\n")[1]
    fast = _simple_head(head)
    assert fast is not None and fast == yaml.load(head, Loader=YAML_LOADER)
    assert fast["cites"][0] == {"path": "Makefile", "lines": "10-40", "blob": cites[0].blob}


def test_an_ordinary_note_is_read_without_the_yaml_library() -> None:
    from memory.store.frontmatter import _simple_head

    for t in NoteType:
        data = dump_note(
            _meta("Build before testing", "run make build first; it's quick", t), "body"
        ).decode()
        fast = _simple_head(data.split("---\n")[1])
        assert fast is not None and fast["summary"] == "run make build first; it's quick"

"""The text side of ``memory import``: an instruction document cut into one card per section, a
memory note made one card, the type rule, front matter, and bounds."""

from __future__ import annotations

from memory.constants import MAX_CONTENT_BYTES, NoteType
from memory.extract.importing import (
    SECTION_BUDGET,
    bounded_body,
    card_type,
    document_cards,
    drop_index_links,
    note_card,
    split_front_matter,
)

CLAUDE_MD = """\
# Frobnicator

This repository holds the frobnicator service and its CLI.

## Build and test

Run `make test` before pushing; CI runs the same target.

- Unit tests: `pytest tests/unit`
  - a single file: `pytest tests/unit/test_x.py -q`
  - with coverage: `make cover`
- Integration tests need Docker.

```sh
# install the tools first
make tools
## not a heading either
make test
```

## Code style

    # an indented code block: not a heading
    x = 1

Use four spaces; `ruff format` decides.

## Preferences

- Keep answers short; no apologies.

## Don't

- Never commit generated protobuf files.

## References

- [Design doc](https://example.com/design)
- [Runbook](https://example.com/runbook)

## Empty section

## Setext heading
----------------

> ## A heading in a quote stays in the body
Setext body.
"""


def by_title(cards):
    return {c.title: c for c in cards}


def test_a_claude_md_is_one_card_per_section_with_lists_and_fences_kept() -> None:
    cards = document_cards(CLAUDE_MD, "CLAUDE.md", title="CLAUDE.md")
    assert [c.title for c in cards] == [
        "Frobnicator",
        "Build and test",
        "Code style",
        "Preferences",
        "Don't",
        "References",
        "Setext heading",
    ]
    build = by_title(cards)["Build and test"]
    assert build.body.startswith("Run `make test` before pushing;")
    assert "  - a single file: `pytest tests/unit/test_x.py -q`\n" in build.body
    # The '#' lines of the fence are body, not sections, and the fence is kept whole.
    assert (
        "```sh\n# install the tools first\nmake tools\n## not a heading either\nmake test\n```" in build.body
    )
    assert "    # an indented code block: not a heading\n" in by_title(cards)["Code style"].body
    assert "> ## A heading in a quote stays in the body" in by_title(cards)["Setext heading"].body
    assert build.summary == "Run make test before pushing; CI runs the same target."
    assert (
        by_title(cards)["Frobnicator"].body == "This repository holds the frobnicator service and its CLI.\n"
    )


def test_each_card_says_where_it_came_from() -> None:
    cards = by_title(document_cards(CLAUDE_MD, "CLAUDE.md", title="CLAUDE.md"))
    assert cards["Code style"].provenance == "import:CLAUDE.md#Code style"
    assert cards["Frobnicator"].provenance == "import:CLAUDE.md#Frobnicator"
    twice = document_cards("## Notes\none\n## Notes\ntwo\n", "AGENTS.md", title="AGENTS.md")
    assert [c.provenance for c in twice] == ["import:AGENTS.md#Notes", "import:AGENTS.md#Notes (2)"]


def test_sections_are_typed_by_their_heading() -> None:
    cards = by_title(document_cards(CLAUDE_MD, "CLAUDE.md", title="CLAUDE.md"))
    assert cards["Code style"].type is NoteType.PROJECT_KNOWLEDGE
    assert cards["Build and test"].type is NoteType.PROJECT_KNOWLEDGE
    assert cards["Preferences"].type is NoteType.USER_PREFERENCE
    assert cards["Don't"].type is NoteType.CORRECTION_FEEDBACK
    assert cards["References"].type is NoteType.REFERENCE_MATERIAL


def test_the_type_rule_order_and_the_links_rule() -> None:
    assert card_type("Code style preferences", "x") is NoteType.PROJECT_KNOWLEDGE
    assert card_type("Personal preferences", "x") is NoteType.USER_PREFERENCE
    assert card_type("Known issues", "x") is NoteType.CORRECTION_FEEDBACK
    assert card_type("Useful docs", "x") is NoteType.REFERENCE_MATERIAL
    links = "- [a](https://a.example)\n- [b](https://b.example)\n- and one plain line\n"
    assert card_type("Where to look", links) is NoteType.REFERENCE_MATERIAL
    assert card_type("Where to look", "one [link](x.md)\nplain\nplain\nplain\n") is NoteType.PROJECT_KNOWLEDGE


def test_the_lone_title_heading_is_not_the_cut_level() -> None:
    text = "# Project\nIntro.\n## A\nalpha\n### A.1\ndeeper\n## B\nbeta\n"
    cards = document_cards(text, "GEMINI.md", title="GEMINI.md")
    assert [(c.title, c.body) for c in cards] == [
        ("Project", "Intro.\n"),
        ("A", "alpha\n### A.1\ndeeper\n"),
        ("B", "beta\n"),
    ]


def test_text_before_the_first_heading_and_a_headingless_file() -> None:
    cards = document_cards("Read the README first.\n\n## Build\nmake\n", "AGENTS.md", title="AGENTS.md")
    assert [(c.title, c.section, c.provenance) for c in cards] == [
        ("AGENTS.md", "", "import:AGENTS.md"),
        ("Build", "Build", "import:AGENTS.md#Build"),
    ]
    one = document_cards("Just one paragraph,\nno headings.\n", "CLAUDE.md", title="CLAUDE.md")
    assert len(one) == 1 and one[0].body == "Just one paragraph,\nno headings.\n"
    assert document_cards("\n\n", "CLAUDE.md", title="CLAUDE.md") == []
    assert document_cards("## Empty\n\n## Also empty\n", "CLAUDE.md", title="CLAUDE.md") == []


def test_crlf_and_a_byte_order_mark_read_like_plain_newlines() -> None:
    cards = document_cards("\ufeff## A\r\nalpha\r\n## B\r\nbeta\r\n", "CLAUDE.md", title="CLAUDE.md")
    assert [(c.title, c.body) for c in cards] == [("A", "alpha\n"), ("B", "beta\n")]


def test_front_matter_is_read_and_a_rule_is_not_front_matter() -> None:
    meta, rest = split_front_matter("---\nname: x\ntype: feedback\n---\nbody\n")
    assert meta == {"name": "x", "type": "feedback"} and rest == "body\n"
    text = "---\nJust prose between rules.\n---\nmore\n"
    assert split_front_matter(text) == ({}, text)
    assert split_front_matter("---\nnot: [closed\n---\nx\n")[0] == {}


def test_a_claude_code_note_is_one_card_from_its_front_matter() -> None:
    note = (
        "---\nname: Testing preferences\ndescription: Integration tests hit a real database.\n"
        "type: feedback\n---\n\n# Why\nThe mocks hid a broken migration.\n\n## How\n- use the dev db\n"
    )
    card = note_card(note, "memory/feedback_testing.md", stem="feedback_testing")
    assert card is not None
    assert card.title == "Testing preferences"
    assert card.summary == "Integration tests hit a real database."
    assert card.type is NoteType.CORRECTION_FEEDBACK
    assert card.body == "# Why\nThe mocks hid a broken migration.\n\n## How\n- use the dev db\n"
    assert card.provenance == "import:memory/feedback_testing.md"
    nested = note_card("---\nname: x\nmetadata:\n  type: reference\n---\nSee the wiki.\n", "n.md", stem="n")
    assert nested is not None and nested.type is NoteType.REFERENCE_MATERIAL


def test_a_note_without_front_matter_takes_its_heading_or_its_file_name() -> None:
    card = note_card("# Deploy steps\n\nTag, then push.\n", "deploy.md", stem="deploy")
    assert card is not None and (card.title, card.body) == ("Deploy steps", "Tag, then push.\n")
    plain = note_card("Tag, then push.\n", "deploy_steps.md", stem="deploy_steps")
    assert plain is not None and plain.title == "deploy steps"
    assert note_card("---\nname: empty\n---\n\n", "e.md", stem="e") is None


def test_a_huge_section_is_cut_at_a_line_with_its_fence_closed_and_a_note() -> None:
    line = "x" * 99 + "\n"
    text = "## Big\n```\n" + line * 400 + "```\n"
    (card,) = document_cards(text, "CLAUDE.md", title="CLAUDE.md")
    assert card.cut
    size = len(card.body.encode())
    assert SECTION_BUDGET < size < MAX_CONTENT_BYTES
    body_lines = card.body.splitlines()
    assert body_lines[-1].startswith("[cut on import: ") and body_lines[-1].endswith(
        "more of this section is in CLAUDE.md]"
    )
    assert body_lines[-3] == "```" and all(ln in ("```", "x" * 99) for ln in body_lines[:-2])
    small, cut = bounded_body("short\n", "CLAUDE.md")
    assert (small, cut) == ("short\n", False)


def test_a_cut_never_splits_a_character() -> None:
    body = ("é" * 50 + "\n") * 400
    cut, was_cut = bounded_body(body, "X.md")
    assert was_cut and cut.encode().decode("utf-8") == cut
    assert all(ln in ("é" * 50, "") or ln.startswith("[cut on import") for ln in cut.splitlines())


def test_the_index_of_a_folder_loses_only_its_links_to_the_folder_notes() -> None:
    index = (
        "# Memory index\n- [Testing](feedback_testing.md) — real database\n"
        "- [Elsewhere](https://example.com)\n* [Role](./user_role.md)\nThe team ships on Fridays.\n"
    )
    kept = drop_index_links(index, ["feedback_testing.md", "user_role.md", "MEMORY.md"])
    assert kept == "# Memory index\n- [Elsewhere](https://example.com)\nThe team ships on Fridays.\n"


def test_hostile_headings_give_one_clean_line() -> None:
    text = "## Style \x1b[31mred\x1b]0;title\x07 \u202eevil\n- body\n"
    (card,) = document_cards(text, "CLAUDE.md", title="CLAUDE.md")
    assert "\x1b" not in card.provenance and "\u202e" not in card.provenance and "\n" not in card.provenance
    assert card.title.startswith("Style")

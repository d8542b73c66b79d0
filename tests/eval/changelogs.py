"""Changelogs and documentation pages as entries for the eval's cards (tests/eval/build_cards.py):
the text cleaned of its markup (reStructuredText, MyST Markdown, GitHub Markdown), cut into
prose paragraphs and sentences, one ``Entry`` per changelog bullet or documentation section,
with the release, its date and its issue numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta

PROJECT = "project_knowledge"
REFERENCE = "reference_material"
MAX_TITLE = 72  # the memory model's titles are short labels (the product allows 100)
# pytest's changelog goes back to 2010: the releases from 7.0 on keep its store at a size of
# the others (hundreds of cards, not thousands).
PYTEST_OLDEST = (7, 0)


@dataclass
class Entry:
    """One changelog entry or doc section, before it becomes a card."""

    text: str  # cleaned paragraphs, "\n\n" between them
    where: str  # "pytest 8.4.2 (2025-09-03), bug fixes" / "pytest docs: How to use fixtures"
    day: date
    kind: str = PROJECT
    title: str = ""  # a doc section's own heading
    refs: list[str] = field(default_factory=list)
    src: str = ""


# -- text clean-up ----------------------------------------------------------------------------

_RST_ROLE = re.compile(r":[a-z:]+:`([^`<]*?)\s*(?:<([^`>]*)>)?`")
_MD_ROLE = re.compile(r"\{([a-z]+)\}`([^`]*)`")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_RST_LINK = re.compile(r"`([^`<]+?)\s*<[^`>]+>`__?")
_RST_REF = re.compile(r"`([^`]+)`_\b")


def _role(m: re.Match[str]) -> str:
    text, target = m.group(1).strip(), m.group(2)
    if not text and target:
        text = target
    text = text.lstrip("~.!")
    if m.group(0).startswith(":ref:") or m.group(0).startswith(":doc:"):
        return text
    if m.group(0).startswith(":user:"):
        return "@" + text
    return f"`{text}`"


def clean_rst(text: str) -> str:
    text = _RST_ROLE.sub(_role, text)
    text = _RST_LINK.sub(r"\1", text)
    text = _RST_REF.sub(r"\1", text)
    text = text.replace("``", "`")
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\1", text)
    text = re.sub(r"\|([a-z]+)\|", r"\1", text)
    text = text.replace("\\ ", "")
    return text


def _md_role(m: re.Match[str]) -> str:
    role, text = m.group(1), m.group(2)
    if role in ("pr", "issue"):
        return f"#{text}"
    if role == "ref":
        return re.sub(r"\s*<[^>]*>", "", text)
    return f"`{text.lstrip('~.')}`"


def clean_md(text: str) -> str:
    text = _MD_ROLE.sub(_md_role, text)
    text = _MD_LINK.sub(r"\1", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    return text


def _paragraphs(lines: list[str]) -> list[str]:
    """Prose paragraphs of a block of lines: code, directives and tables dropped."""
    out: list[str] = []
    cur: list[str] = []
    skip_indent: int | None = None
    fence = False
    for raw in lines:
        line = raw.rstrip()
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if stripped.startswith("```"):
            fence = not fence
            if cur:
                out.append(" ".join(cur))
                cur = []
            continue
        if fence:
            continue
        if skip_indent is not None:
            if not stripped or indent > skip_indent:
                continue
            skip_indent = None
        if stripped.startswith(".. ") or (stripped.endswith("::") and not stripped.startswith("-")):
            # A directive or a literal block: its indented lines are code or markup.
            if stripped.endswith("::") and not stripped.startswith(".."):
                cur.append(stripped[:-1].rstrip(":") + ":")
            if cur:
                out.append(" ".join(cur))
                cur = []
            skip_indent = indent
            continue
        if stripped.startswith("#. "):
            stripped = "- " + stripped[3:]  # an RST enumerated list item
        if not cur and (
            stripped.startswith(("$ ", ">>> ", "|", "+--", "===", "---", "#"))
            or re.fullmatch(r"\([\w-]+\)=", stripped)
        ):
            continue  # a shell session, a table, a Markdown label: not prose
        if not stripped:
            if cur:
                out.append(" ".join(cur))
                cur = []
            continue
        if stripped.startswith(("- ", "* ")) and cur:
            out.append(" ".join(cur))
            cur = []
        cur.append(stripped)
    if cur:
        out.append(" ".join(cur))
    paras = [
        re.sub(r"\s+", " ", p).strip()
        for p in out
        if p.strip() and not re.fullmatch(r"[-=~^*#`]+", p.strip())
    ]
    # "Run it like this:" whose example was code (dropped) says nothing left on its own.
    return [
        p
        for i, p in enumerate(paras)
        if not p.endswith(":") or (i + 1 < len(paras) and paras[i + 1][:2] in ("- ", "* "))
    ]


_ABBREV = ("e.g.", "i.e.", "etc.", "vs.", "v.", "No.", "approx.", "resp.")


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (a period inside a code span or after an abbreviation does
    not end one)."""
    out: list[str] = []
    start = 0
    in_code = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == "`":
            in_code = not in_code
        elif c in ".!?" and not in_code and (i + 1 == len(text) or text[i + 1] == " "):
            head = text[start : i + 1]
            nxt = text[i + 2 : i + 3]
            if not head.endswith(_ABBREV) and (not nxt or nxt.isupper() or nxt in "`(\"'" or nxt.isdigit()):
                out.append(head.strip())
                start = i + 1
        i += 1
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return [s for s in out if s]


def cut(text: str, limit: int, *, mark: str = "") -> str:
    """``text`` at most ``limit`` characters, cut at a word boundary (``mark`` appended when cut)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - len(mark)]
    if " " in cut[20:]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:(-—") + mark


# -- the parsers ------------------------------------------------------------------------------


def _day(text: str) -> date:
    y, m, d = (int(x) for x in text.split("-"))
    return date(y, m, d)


def _entries_of(lines: list[str], bullet: re.Pattern[str]) -> Iterator[list[str]]:
    """The bullet entries of a section: each a bullet line and its continuation lines."""
    cur: list[str] | None = None
    for line in lines:
        if bullet.match(line):
            if cur:
                yield cur
            cur = [bullet.sub("", line, count=1)]
        elif cur is not None and (not line.strip() or line.startswith((" ", "\t"))):
            cur.append(line[2:] if line.startswith("  ") else line)
        elif cur is not None:
            yield cur
            cur = None
    if cur:
        yield cur


def pytest_changelog(text: str, version: str) -> list[Entry]:
    lines = text.split("\n")
    heads = [
        i
        for i in range(len(lines) - 1)
        if re.fullmatch(r"pytest \d+\.\d+\.\d+\S* \(\d{4}-\d\d-\d\d\)", lines[i])
        and lines[i + 1].startswith("===")
    ]
    out: list[Entry] = []
    for n, i in enumerate(heads):
        m = re.fullmatch(r"pytest (\d+)\.(\d+)\.(\S+) \((\S+)\)", lines[i])
        assert m is not None
        if (int(m.group(1)), int(m.group(2))) < PYTEST_OLDEST:
            break
        ver, day = f"{m.group(1)}.{m.group(2)}.{m.group(3)}", _day(m.group(4))
        block = lines[i + 2 : heads[n + 1] if n + 1 < len(heads) else len(lines)]
        sections: list[tuple[str, list[str]]] = []
        for j, line in enumerate(block):
            if (
                j + 1 < len(block)
                and block[j + 1].startswith("---")
                and line.strip()
                and not line.startswith("-")
            ):
                sections.append((line.strip(), []))
            elif sections and not line.startswith("---"):
                sections[-1][1].append(line)
        for name, body in sections:
            for raw in _entries_of(body, re.compile(r"^- ")):
                first = raw[0]
                refs = re.findall(r"`#(\d+) <", first)
                first = re.sub(r"^(`#\d+ <[^>]*>`_,?\s*)+:\s*", "", first)
                paras = [clean_rst(p) for p in _paragraphs([first, *raw[1:]])]
                paras = [p for p in paras if not p.startswith("-- by") and not re.fullmatch(r"by @\S+", p)]
                paras = [re.sub(r"\s*-- by @\S+\s*$", "", p) for p in paras]
                if paras:
                    out.append(
                        Entry(
                            "\n\n".join(paras),
                            f"pytest {ver} ({day}), {name.lower()}",
                            day,
                            refs=[f"#{r}" for r in refs],
                            src=f"pytest {version} doc/en/changelog.rst",
                        )
                    )
    return out


# Who did it and where: the memory model keeps the fact, not the credits.
_ATTRIBUTION = re.compile(
    r"\s+by\s+\[?@.*?\s+in\s+(\[#\d+\]\([^)]*\)|https?://\S+)"
    r"([,\s]+(and\s+)?(\[#\d+\]\([^)]*\)|https?://\S+))*\.?"
)
# Entries no one would keep a card of: first contributions, bots' dependency bumps.
_NOISE = re.compile(r"made their first contribution|@dependabot|pre-commit-ci|pre-commit autoupdate", re.I)


def pydantic_changelog(text: str, version: str) -> list[Entry]:
    lines = text.split("\n")
    out: list[Entry] = []
    ver, day, section = "", date(2000, 1, 1), ""
    body: list[str] = []

    def flush() -> None:
        if not ver or section in ("", "New Contributors"):
            return
        for raw in _entries_of(body, re.compile(r"^\* ")):
            joined = "\n".join(raw)
            refs = re.findall(r"\[#(\d+)\]|/pull/(\d+)", joined)
            refs = [a or b for a, b in refs]
            paras = _paragraphs(raw)
            if not paras or _NOISE.search(paras[0]):
                continue
            paras[0] = _ATTRIBUTION.sub("", paras[0])
            paras = [clean_md(p) for p in paras]
            out.append(
                Entry(
                    "\n\n".join(paras),
                    f"pydantic {ver} ({day}), {section.lower()}",
                    day,
                    refs=[f"#{r}" for r in refs],
                    src=f"pydantic {version} METADATA (changelog)",
                )
            )

    for line in lines:
        m = re.fullmatch(r"## v(\d+\.\d+\.\d+\S*) \((\d{4}-\d\d-\d\d)\)", line)
        if m:
            flush()
            ver, day, section, body = m.group(1), _day(m.group(2)), "", []
            continue
        m = re.fullmatch(r"#{3,4} (.+)", line)
        if m and ver:
            flush()
            section, body = m.group(1).strip(), []
            if section == "What's Changed":
                section = ""
            continue
        if ver:
            body.append(line)
    flush()
    return out


def anyio_changelog(text: str, version: str, newest: date) -> list[Entry]:
    """anyio's history has no dates: each release is dated two weeks before the next one
    (only the order matters, for the index's newest-first rank)."""
    lines = text.split("\n")
    heads = [i for i, line in enumerate(lines) if re.fullmatch(r"\*\*\d+\.\d+\.\d+\S*\*\*", line)]
    out: list[Entry] = []
    for n, i in enumerate(heads):
        ver = lines[i].strip("*")
        day = newest - timedelta(days=14 * n)
        block = lines[i + 1 : heads[n + 1] if n + 1 < len(heads) else len(lines)]
        section = "changes"
        chunk: list[str] = []

        def flush(section: str, chunk: list[str], ver: str = ver, day: date = day) -> None:
            for raw in _entries_of(chunk, re.compile(r"^- ")):
                joined = " ".join(x.strip() for x in raw)
                refs = re.findall(r"`#(\d+) <", joined)
                paras = _paragraphs(raw)
                paras = [clean_rst(re.sub(r"\s*\(`#\d+ <[^>]*>`_[^)]*\)\s*$", "", p)) for p in paras]
                paras = [re.sub(r"\s*\(PR by @[\w-]+\)$", "", p) for p in paras if p]
                if paras:
                    out.append(
                        Entry(
                            "\n\n".join(paras),
                            f"anyio {ver}, {section}",
                            day,
                            refs=[f"#{r}" for r in refs],
                            src=f"anyio {version} docs/versionhistory.rst",
                        )
                    )

        for line in block:
            m = re.fullmatch(r"\*([A-Za-z][^*]+)\*", line.strip())
            if m:
                flush(section, chunk)
                section, chunk = m.group(1).lower(), []
            else:
                chunk.append(line)
        flush(section, chunk)
    return out


def click_changelog(text: str, version: str) -> list[Entry]:
    lines = text.split("\n")
    out: list[Entry] = []
    ver, day = "", date(2000, 1, 1)
    chunk: list[str] = []

    def flush() -> None:
        if not ver:
            return
        for raw in _entries_of(chunk, re.compile(r"^- ")):
            joined = " ".join(raw)
            refs = re.findall(r"\{(?:pr|issue)\}`(\d+)`", joined)
            paras = _paragraphs(raw)
            paras = [clean_md(re.sub(r"(\s*\{(?:pr|issue)\}`\d+`)+\s*$", "", p)) for p in paras]
            paras = [p for p in paras if p]
            if paras:
                out.append(
                    Entry(
                        "\n\n".join(paras),
                        f"click {ver} ({day}), changes",
                        day,
                        refs=[f"#{r}" for r in refs],
                        src=f"click {version} CHANGES.md",
                    )
                )

    for line in lines:
        m = re.fullmatch(r"## Version (\S+)", line)
        if m:
            flush()
            ver, chunk = m.group(1), []
            continue
        m = re.fullmatch(r"Released (\d{4}-\d\d-\d\d).*", line)
        if m and ver:
            day = _day(m.group(1))
            continue
        if ver:
            chunk.append(line)
    flush()
    return out


def _sections_rst(text: str) -> list[tuple[str, str, list[str]]]:
    """(page title, section heading, lines) of an RST page."""
    lines = text.split("\n")
    heads: list[tuple[int, str, str]] = []  # (line, heading, underline char)
    for i in range(len(lines) - 1):
        under = lines[i + 1]
        if (
            lines[i].strip()
            and not lines[i].startswith((" ", ".."))
            and re.fullmatch(r"([=\-~^\"'*+#])\1{2,}", under)
            and len(under) >= len(lines[i].rstrip()) - 2
        ):
            if i > 0 and re.fullmatch(r"([=\-~^\"'*+#])\1{2,}", lines[i - 1]):
                continue  # an overlined title's text is handled at the underline
            heads.append((i, lines[i].strip(), under[0]))
    if not heads:
        return []
    page = heads[0][1]
    out = []
    for n, (i, head, _) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        out.append((page, head, lines[i + 2 : end]))
    return out


def _sections_md(text: str) -> list[tuple[str, str, list[str]]]:
    lines = text.split("\n")
    heads: list[tuple[int, str]] = []
    fence = False
    for i, line in enumerate(lines):
        if line.strip().startswith("```"):
            fence = not fence
        m = re.fullmatch(r"(#{1,4}) (.+)", line)
        if m and not fence:
            heads.append((i, m.group(2).strip()))
    if not heads:
        return []
    page = heads[0][1]
    return [
        (page, head, lines[i + 1 : heads[n + 1][0] if n + 1 < len(heads) else len(lines)])
        for n, (i, head) in enumerate(heads)
    ]


def doc_entries(project: str, version: str, name: str, text: str, day: date) -> list[Entry]:
    md = name.endswith(".md") or name == "METADATA"
    sections = _sections_md(text) if md else _sections_rst(text)
    out: list[Entry] = []
    for page, head, lines in sections:
        paras = [clean_md(p) if md else clean_rst(p) for p in _paragraphs(lines)]
        paras = [p for p in paras if len(p) > 30 and not p.startswith(("{", ":", "<"))]
        if not paras or sum(len(p) for p in paras) < 120:
            continue
        head = clean_md(head) if md else clean_rst(head)
        page = clean_md(page) if md else clean_rst(page)
        title = head if head == page else f"{page}: {head}"
        if len(title) > MAX_TITLE:
            title = head if len(head) <= MAX_TITLE else cut(head, MAX_TITLE)
        out.append(
            Entry(
                "\n\n".join(paras),
                f"{project} docs, {page}",
                day,
                kind=REFERENCE,
                title=title,
                src=f"{project} {version} {name}",
            )
        )
    return out

"""Build the eval's cards (tests/eval/data/cards/<store>.jsonl) from their sources.

    python -m tests.eval.build_cards [--sources DIR] [--check]

Each project store is one package's own text, read into entries by tests/eval/changelogs.py:
every entry of its changelog becomes a project_knowledge card, every section of its
documentation a reference_material card, written the way the memory model writes one (a short
title, a one-line summary, a body of a few sentences, the release it came from). One card in
sixteen gets a near-duplicate (the same fact noted again under another title, as a second session
would), and the hand-written cards of
tests/eval/data/hand/<store>.yaml are added: the user store's preferences and corrections, and
each project's team knowledge with the corrections that supersede it.

The sources are the packages named in ``SOURCES`` (tests/eval/data/SOURCES.md cites them): an
installed distribution's METADATA when its version matches, else the sdist, fetched once with
``pip download --no-deps --no-binary :all:`` into ``--sources`` (default
``~/.cache/pseudoclaude-eval``) and checked against the sha256 recorded here. The output
depends on nothing else: the same sources give the same bytes. ``--check`` rebuilds in memory
and fails when the committed files differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from tests.eval.changelogs import (
    MAX_TITLE,
    PROJECT,
    REFERENCE,
    Entry,
    anyio_changelog,
    click_changelog,
    cut,
    doc_entries,
    pydantic_changelog,
    pytest_changelog,
    sentences,
)

DATA = Path(__file__).parent / "data"
CARDS_DIR = DATA / "cards"
HAND_DIR = DATA / "hand"
DEFAULT_SOURCES = Path.home() / ".cache" / "pseudoclaude-eval"

TYPES = ("user_preference", "correction_feedback", PROJECT, REFERENCE)
MAX_SUMMARY = 200
MAX_BODY = 900
TWIN_SHARE = 16  # one card in this many gets a near-duplicate


@dataclass(frozen=True)
class Source:
    """One package whose text feeds a project store."""

    package: str
    version: str
    license: str
    store: str
    # What is read: "metadata" (the long description: README and, for some, the changelog) or
    # paths inside the sdist (glob patterns relative to its top folder).
    files: tuple[str, ...]
    sdist_sha256: str = ""  # the sdist the cards were built from (checked when it is read)


SOURCES: tuple[Source, ...] = (
    Source("pydantic", "2.14.4", "MIT", "pydantic", ("metadata",)),
    Source(
        "pytest",
        "8.4.2",
        "MIT",
        "pytest",
        ("doc/en/changelog.rst", "doc/en/how-to/*.rst", "doc/en/explanation/*.rst"),
        "86c0d0b93306b961d58d62a4db4879f27fe25513d4b969df351abdddb3c30e01",
    ),
    Source(
        "anyio",
        "4.16.0",
        "MIT",
        "anyio",
        ("docs/versionhistory.rst", "docs/*.rst"),
        "59bb03251907983d1603d27c3087ddb1e93299ea2163adcdba37899a4fb12ffb",
    ),
    Source(
        "click",
        "8.5.1",
        "BSD-3-Clause",
        "click",
        ("CHANGES.md", "docs/*.md"),
        "9bbfada76703fd1d784b83eea012e3e8c6a001a876543ef104fa56aaaeb072b4",
    ),
)
STORES = ("pydantic", "pytest", "anyio", "click", "user")
# Doc pages left out: the changelog (read on its own), contributing and license pages, and API
# references (signatures rather than prose).
SKIP_DOCS = {
    "changelog.rst",
    "versionhistory.rst",
    "changes.md",
    "contributing.rst",
    "contributing.md",
    "index.rst",
    "index.md",
    "license.md",
    "license.rst",
    "api.rst",
    "api.md",
    "support.rst",
    "contrib.md",
    "upgrade-guides.md",
}


@dataclass
class Card:
    store: str
    filename: str
    type: str
    title: str
    summary: str
    body: str
    updated: str  # RFC 3339 UTC: ranks the prompt's index (newest first within a type)
    src: str = ""
    twin_of: str = ""  # a near-duplicate: the card it repeats (both answer the same question)
    supersedes: str = ""  # a correction: the card it makes wrong

    def row(self) -> dict[str, str]:
        out = {
            "store": self.store,
            "filename": self.filename,
            "type": self.type,
            "title": self.title,
            "summary": self.summary,
            "body": self.body,
            "updated": self.updated,
        }
        for k in ("src", "twin_of", "supersedes"):
            if getattr(self, k):
                out[k] = getattr(self, k)
        return out


# -- fetching the sources ---------------------------------------------------------------------


def _sdist(src: Source, cache: Path) -> Path:
    path = _fetch(src, cache)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if src.sdist_sha256 and digest != src.sdist_sha256:
        raise SystemExit(f"{path} has sha256 {digest}, not the {src.sdist_sha256} the cards were built from")
    return path


def _fetch(src: Source, cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    for p in sorted(cache.glob(f"{src.package}-{src.version}.tar.gz")):
        return p
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--quiet",
        f"{src.package}=={src.version}",
        "-d",
        str(cache),
    ]
    print(f"fetching {src.package}=={src.version}: {' '.join(cmd)}", file=sys.stderr)
    subprocess.run(cmd, check=True)
    found = sorted(cache.glob(f"{src.package}-{src.version}.tar.gz"))
    if not found:
        raise SystemExit(f"pip download left no {src.package}-{src.version}.tar.gz in {cache}")
    return found[0]


def _tar_files(path: Path, patterns: Iterable[str]) -> list[tuple[str, str]]:
    """(path inside the sdist, text) of the files matching ``patterns``, in pattern then name order."""
    out: list[tuple[str, str]] = []
    with tarfile.open(path) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)
        for pattern in patterns:
            rx = re.compile("[^/]+/" + re.escape(pattern).replace(r"\*", "[^/]*") + "$")
            for m in members:
                rel = m.name.split("/", 1)[1]
                if rx.fullmatch(m.name) and rel not in {r for r, _ in out}:
                    f = tar.extractfile(m)
                    assert f is not None
                    out.append((rel, f.read().decode("utf-8")))
    return out


def read_source(src: Source, cache: Path) -> list[tuple[str, str]]:
    """(name, text) of what ``src`` reads."""
    if src.files == ("metadata",):
        try:
            dist = metadata.distribution(src.package)
            if dist.version == src.version:
                text = dist.read_text("METADATA")
                if text:
                    return [("METADATA", text)]
        except metadata.PackageNotFoundError:
            pass
        return [("METADATA", text) for _, text in _tar_files(_sdist(src, cache), ["PKG-INFO"])]
    return _tar_files(_sdist(src, cache), src.files)


# -- titles and names -------------------------------------------------------------------------

# Where a long first sentence can end as a title: before a clause ("when", "if", ", ", "(" ...).
_CLAUSE = re.compile(
    r",\s| when | if | so that | which | because | instead of | by | for | in order | \(| - | — | to avoid "
)


def make_title(sentence: str) -> str:
    """A card's title from an entry's first sentence: whole when short, else cut before a clause
    or at a word, never ending on a word such as "of" or "the"."""
    s = sentence.rstrip(".:;")
    if len(s) <= MAX_TITLE:
        return s
    best = None
    for m in _CLAUSE.finditer(s):
        if 28 <= m.start() <= MAX_TITLE:
            best = m.start()
    title = s[:best].rstrip(" ,") if best is not None else cut(s, MAX_TITLE)
    words = title.split()
    while len(words) > 4 and words[-1].lower().strip(",;") in _TAIL_WORDS:
        words.pop()  # a title cut at a word boundary does not end in "of the"
    return " ".join(words).rstrip(",;:")


_TAIL_WORDS = frozenset(
    """a an the of to from on in for with and or that which by as at is are be
was were when if into its their this these than then not no so but also""".split()
)

# How a changelog section's name reads in a card's summary ("Bug fix in pytest 8.0.2 ...").
_KINDS = {
    "bug fixes": "Bug fix",
    "fixes": "Bug fix",
    "improved documentation": "Documentation change",
    "trivial/internal changes": "Internal change",
    "miscellaneous internal changes": "Internal change",
    "features": "Feature",
    "new features": "New feature",
    "improvements": "Improvement",
    "improvements in existing functionality": "Improvement",
    "deprecations": "Deprecation",
    "deprecations (removal in next major release)": "Deprecation",
    "breaking changes": "Breaking change",
    "removals": "Removal",
    "removals and backward incompatible breaking changes": "Breaking change",
    "packaging": "Packaging change",
    "performance": "Performance change",
    "changes": "Change",
    "other changes": "Change",
    "contributor-facing changes": "Contributor-facing change",
}


def _kind_phrase(where: str) -> str:
    """``"pytest 8.0.2 (2024-02-24), bug fixes"`` as ``"Bug fix in pytest 8.0.2 (2024-02-24)."``"""
    release, _, section = where.partition(", ")
    kind = _KINDS.get(section, section[:1].upper() + section[1:] if section else "Change")
    return f"{kind} in {release}."


def slug(title: str) -> str:
    """A filename's slug the way the product makes one (memory/text/names.py: 48 characters)."""
    s = re.sub(r"[^a-z0-9]+", "-", title.lower().encode("ascii", "ignore").decode()).strip("-")
    return s[:48].rstrip("-") or "note"


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


# -- entries to cards -------------------------------------------------------------------------


def _body(entry: Entry) -> str:
    text = entry.text
    if len(text) > MAX_BODY:
        kept: list[str] = []
        for s in sentences(text.replace("\n\n", " ")):
            if sum(len(k) + 1 for k in kept) + len(s) > MAX_BODY:
                break
            kept.append(s)
        text = " ".join(kept) if kept else cut(text, MAX_BODY, mark="…")
    refs = list(dict.fromkeys(entry.refs))
    ref = f" ({', '.join(refs[:3])})" if refs else ""
    lead = f"From the {entry.where}{ref}." if entry.kind == PROJECT else f"From the {entry.where}."
    return f"{text}\n\n{lead}\n"  # a card file's body ends with a newline (``dump_note``)


def _summary(entry: Entry, title: str, first: list[str]) -> str:
    if entry.kind == REFERENCE:
        return cut(first[0], MAX_SUMMARY, mark="…")
    lead = first[0].rstrip(".")
    if lead != title and len(lead) > len(title) + 15:
        return cut(first[0], MAX_SUMMARY, mark="…")
    if len(first) > 1 and len(first[1]) > 30:
        return cut(first[1], MAX_SUMMARY, mark="…")
    return cut(_kind_phrase(entry.where), MAX_SUMMARY)


def _twin(card: Card, entry: Entry, first: list[str]) -> Card:
    """The same fact noted again by another session: another title, the summary reworded."""
    codes = re.findall(r"`([^`]{2,40})`", entry.text)
    where = entry.where.split(",")[0].split(" (")[0]
    if codes:
        title = f"Note on `{codes[0]}` ({where})"
    else:
        words = card.title.split()[: max(4, len(card.title.split()) // 2)]
        while len(words) > 3 and words[-1].lower() in _TAIL_WORDS:
            words.pop()
        title = f"{where}: {' '.join(words)}"
    lead = first[0]
    summary = cut(
        f"Since {where}: {lead[0].lower()}{lead[1:]}" if lead[:1].isupper() else f"Since {where}: {lead}",
        MAX_SUMMARY,
        mark="…",
    )
    body = f"Noted again while reading the {entry.where}: {entry.text.split(chr(10))[0]}"
    return Card(
        card.store,
        "",
        card.type,
        cut(title, MAX_TITLE),
        summary,
        cut(body, MAX_BODY, mark="…") + "\n",
        card.updated,
        card.src,
        twin_of=card.filename,
    )


def cards_of(store: str, entries: list[Entry]) -> list[Card]:
    out: list[Card] = []
    names: set[str] = set()

    def name_of(kind: str, title: str) -> str:
        base = f"{kind}_{slug(title)}"
        name, n = f"{base}.md", 2
        while name.casefold() in names:
            name, n = f"{base}-{n}.md", n + 1
        names.add(name.casefold())
        return name

    seen_text: set[str] = set()
    for entry in entries:
        if entry.text in seen_text:
            continue  # the same entry in two releases' notes (a backport): one card
        seen_text.add(entry.text)
        first = sentences(entry.text.split("\n\n")[0]) or [entry.text]
        title = entry.title or make_title(first[0])
        if len(title) < 8:
            continue
        card = Card(
            store,
            name_of(entry.kind, title),
            entry.kind,
            title,
            _summary(entry, title, first),
            _body(entry),
            f"{entry.day.isoformat()}T12:00:00Z",
            entry.src,
        )
        out.append(card)
        if entry.kind == PROJECT and _digest(card.filename) % TWIN_SHARE == 0:
            twin = _twin(card, entry, first)
            twin.filename = name_of(twin.type, twin.title)
            out.append(twin)
    return out


HAND_START = date(2025, 1, 4)  # a hand-written card without ``updated``: dated by its place in its file
HAND_STEP = 2  # days between two of them


def hand_cards(store: str) -> list[Card]:
    """The hand-written cards of a store (tests/eval/data/hand/<store>.yaml), oldest first: each
    a mapping of type, title, summary, body, optionally ``updated`` (a date; else the card's
    place in the file dates it), and for a correction ``supersedes`` (the title of the card it
    makes wrong) or for a near-duplicate ``twin_of`` (the title of the card it repeats)."""
    path = HAND_DIR / f"{store}.yaml"
    if not path.exists():
        return []
    rows = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    by_title: dict[str, str] = {}
    out: list[Card] = []
    for i, row in enumerate(rows):
        kind = row["type"]
        if kind not in TYPES:
            raise SystemExit(f"{path}: unknown type {kind!r} for {row.get('title')!r}")
        title = row["title"].strip()
        name = f"{kind}_{slug(title)}.md"
        if title in by_title:
            raise SystemExit(f"{path}: two cards titled {title!r}")
        by_title[title] = name
        day = row.get("updated") or HAND_START + timedelta(days=HAND_STEP * i)
        stamp = day.isoformat() if isinstance(day, date) else str(day)
        out.append(
            Card(
                store,
                name,
                kind,
                title,
                row["summary"].strip(),
                row["body"].strip() + "\n",
                f"{stamp}T09:00:00Z",
                "hand-written",
                twin_of=row.get("twin_of", ""),
                supersedes=row.get("supersedes", ""),
            )
        )
    for card in out:
        for attr in ("twin_of", "supersedes"):
            target = getattr(card, attr)
            if target:
                if target not in by_title:
                    raise SystemExit(
                        f"{path}: {card.title!r} {attr} {target!r}, which is no card of this file"
                    )
                setattr(card, attr, by_title[target])
    return out


def build(cache: Path) -> dict[str, list[Card]]:
    """Every store's cards (see the module's docstring)."""
    stores: dict[str, list[Card]] = {s: [] for s in STORES}
    for src in SOURCES:
        files = read_source(src, cache)
        entries: list[Entry] = []
        if src.package == "pydantic":
            text = files[0][1]
            body = text.split("\n\n", 1)[1] if "\n\n" in text else text
            readme, _, changelog = body.partition("## Changelog")
            entries += pydantic_changelog(changelog, src.version)
            newest = max(e.day for e in entries)
            entries += doc_entries("pydantic", src.version, "METADATA", readme, newest)
        elif src.package == "pytest":
            log = dict(files)["doc/en/changelog.rst"]
            entries += pytest_changelog(log, src.version)
            newest = max(e.day for e in entries)
            for name, text in files:
                if Path(name).name.lower() not in SKIP_DOCS and "/" in name:
                    entries += doc_entries("pytest", src.version, name, text, newest)
        elif src.package == "anyio":
            newest = date(2026, 11, 1)
            entries += anyio_changelog(dict(files)["docs/versionhistory.rst"], src.version, newest)
            for name, text in files:
                if Path(name).name.lower() not in SKIP_DOCS and "/" in name:
                    entries += doc_entries("anyio", src.version, name, text, newest)
        elif src.package == "click":
            entries += click_changelog(dict(files)["CHANGES.md"], src.version)
            newest = max(e.day for e in entries)
            for name, text in files:
                if Path(name).name.lower() not in SKIP_DOCS and "/" in name:
                    entries += doc_entries("click", src.version, name, text, newest)
        stores[src.store] += cards_of(src.store, entries)
    for store in STORES:
        taken = {c.filename.casefold() for c in stores[store]}
        for card in hand_cards(store):
            if card.filename.casefold() in taken:
                raise SystemExit(f"hand/{store}.yaml: {card.filename} is already a card of that store")
            taken.add(card.filename.casefold())
            stores[store].append(card)
        stores[store].sort(key=lambda c: c.filename)
    return stores


def dumps(cards: list[Card]) -> str:
    return "".join(json.dumps(c.row(), ensure_ascii=False, separators=(",", ":")) + "\n" for c in cards)


def load_rows(store: str) -> list[dict[str, Any]]:
    path = CARDS_DIR / f"{store}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tests.eval.build_cards", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--sources", type=Path, default=DEFAULT_SOURCES, help="where the sdists are kept")
    ap.add_argument(
        "--check", action="store_true", help="fail when the committed cards differ from a rebuild"
    )
    args = ap.parse_args(argv)
    stores = build(args.sources)
    CARDS_DIR.mkdir(parents=True, exist_ok=True)
    differ = []
    for store, cards in stores.items():
        path = CARDS_DIR / f"{store}.jsonl"
        text = dumps(cards)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                differ.append(store)
            continue
        path.write_text(text, encoding="utf-8")
        shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
        print(f"{store}: {len(cards)} cards -> {shown}")
    if differ:
        print(f"cards differ from a rebuild: {', '.join(differ)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

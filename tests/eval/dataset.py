"""The eval's labelled data: the cards of each store (tests/eval/data/cards/<store>.jsonl, built
by ``python -m tests.eval.build_cards``) and the hand-written questions
(tests/eval/data/questions.jsonl), with their split.

A question is asked in one **workspace**, named by its ``store``: a project's workspace holds
that project's store and the user store; the ``user`` workspace holds the user store alone (a
repository without project memory). Its ``answers`` are the cards (``level/filename``) that
answer it: any one of them counts. ``kind``: ``on`` (answered by the store), ``none`` (about
the same project, not answered by any card), ``off`` (not about anything in the store: an
everyday coding request, or another project's question).

The split is the id's hash: about 70 % **dev**, 30 % **held-out**. Held-out questions are never
looked at while tuning; their figures are the ones that count.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DATA = Path(__file__).parent / "data"
QUESTIONS = DATA / "questions.jsonl"
CARDS_DIR = DATA / "cards"
PROJECTS = ("pydantic", "pytest", "anyio", "click")
WORKSPACES = (*PROJECTS, "user")
KINDS = ("on", "none", "off")
Split = Literal["dev", "held-out"]
DEV_SHARE = 70  # percent


@dataclass(frozen=True)
class Card:
    store: str  # a project's name, or "user"
    filename: str
    type: str
    title: str
    summary: str
    body: str
    updated: str
    twin_of: str = ""
    supersedes: str = ""

    @property
    def level(self) -> str:
        return "user" if self.store == "user" else "project"

    @property
    def key(self) -> str:
        return f"{self.level}/{self.filename}"


@dataclass(frozen=True)
class Question:
    id: str
    store: str  # the workspace it is asked in
    kind: str
    text: str
    answers: tuple[str, ...]  # level/filename

    @property
    def split(self) -> Split:
        return split_of(self.id)


def split_of(qid: str) -> Split:
    """dev or held-out, from the id alone (stable whatever else changes)."""
    return "dev" if int(hashlib.sha256(qid.encode()).hexdigest()[:8], 16) % 100 < DEV_SHARE else "held-out"


def load_cards(store: str) -> list[Card]:
    path = CARDS_DIR / f"{store}.jsonl"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append(
                Card(
                    row["store"],
                    row["filename"],
                    row["type"],
                    row["title"],
                    row["summary"],
                    row["body"],
                    row["updated"],
                    row.get("twin_of", ""),
                    row.get("supersedes", ""),
                )
            )
    return out


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        try:
            out.append(
                Question(row["id"], row["store"], row["kind"], row["text"], tuple(row.get("answers", ())))
            )
        except KeyError as e:
            raise ValueError(f"{path.name} line {n}: no {e.args[0]!r}") from None
    return out


def workspace_cards(store: str) -> tuple[list[Card], list[Card]]:
    """(project cards, user cards) of a workspace."""
    user = load_cards("user")
    return ([] if store == "user" else load_cards(store)), user

"""The two versions of a conflicted card, named for a person.

A card ``memory sync`` left conflicted says which machine each version is from in git's marker
labels ("this machine <host>", "the remote <url>"): those are its names, whichever side of the
markers each is on (during a rebase git calls the remote "ours"). Any other conflict (a merge
someone ran) keeps git's "ours" and "theirs". Each name comes with the key that takes it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["REMOTE", "THIS_MACHINE", "SideName", "by_machine", "local_label", "remote_label", "side_names"]

THIS_MACHINE = "this machine"
REMOTE = "the remote"
_KEYS = {THIS_MACHINE: "m", REMOTE: "r", "ours": "o", "theirs": "t"}


@dataclass(frozen=True)
class SideName:
    name: str  # "this machine", "the remote", "ours", "theirs"
    key: str  # the key that takes this version in the resolution view
    detail: str = ""  # the rest of git's label: the host, the remote's URL, a branch

    @property
    def possessive(self) -> str:
        """ "this machine's", "the remote's", "ours", "theirs"."""
        return self.name if self.name in ("ours", "theirs") else f"{self.name}'s"


def local_label(host: str) -> str:
    """The marker label of this machine's version (what ``side_names`` reads back)."""
    return f"{THIS_MACHINE} {host}".strip()


def remote_label(remote: str) -> str:
    """The marker label of the remote's version."""
    return f"{REMOTE} {remote}".strip()


def _machine(label: str) -> tuple[str, str] | None:
    """(the machine, the rest of the label) of a label the sync wrote, else None."""
    text = " ".join(label.split())
    # "remote <url>": the label an earlier version of the sync wrote.
    for prefix, name in ((THIS_MACHINE, THIS_MACHINE), (REMOTE, REMOTE), ("remote", REMOTE)):
        if text.casefold() == prefix or text.casefold().startswith(f"{prefix} "):
            return name, text[len(prefix) :].strip()
    return None


def side_names(ours_label: str, theirs_label: str) -> tuple[SideName, SideName]:
    """The names of the versions above and below the markers' ``=======``, from their labels."""
    first, second = _machine(ours_label), _machine(theirs_label)
    if first is not None and second is not None and first[0] != second[0]:
        return (
            SideName(first[0], _KEYS[first[0]], first[1]),
            SideName(second[0], _KEYS[second[0]], second[1]),
        )
    return SideName("ours", "o", ours_label), SideName("theirs", "t", theirs_label)


def by_machine(names: tuple[SideName, SideName]) -> bool:
    """Whether the two versions are named by machine (a conflict ``memory sync`` left)."""
    return names[0].name in (THIS_MACHINE, REMOTE)

"""Git conflict markers in a card file: found, and split into the two versions.

A merge that changed the same card on both branches leaves ``<<<<<<<``/``=======``/``>>>>>>>``
hunks in it. Such a file is no card: parsing it would hand a prompt one side's front matter
and both sides' bodies. It is recognised only in the full shape git writes (an opening line,
then a separator, then a closing one, each at a line start) so a card that merely mentions a
marker inside a sentence is not mistaken for one.
"""

from __future__ import annotations

import re

from memory.model import ConflictSides
from memory.text.names import sanitize_line

__all__ = ["has_conflict", "split_conflict"]

# git's default marker size is 7; ``conflict-marker-size`` may make them longer.
_OPEN = re.compile(r"<{7,}(?: (.*))?")
_BASE = re.compile(r"\|{7,}(?: .*)?")
_SEP = re.compile(r"={7,}")
_CLOSE = re.compile(r">{7,}(?: (.*))?")


def has_conflict(text: str) -> bool:
    """Whether ``text`` holds at least one whole conflict hunk. Cheap for the common case: a
    card without a line starting ``<<<<<<<`` is decided by one substring search."""
    if "<<<<<<<" not in text:
        return False
    return split_conflict(text) is not None


def split_conflict(text: str) -> ConflictSides | None:
    """The two files a conflicted ``text`` stands for, or None when it has no whole hunk (an
    unclosed or out-of-order hunk is no conflict git wrote: the file is read as it is)."""
    ours: list[str] = []
    theirs: list[str] = []
    labels = ["", ""]
    state = "both"  # both | ours | base | theirs
    hunks = 0
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if state == "both":
            m = _OPEN.fullmatch(bare)
            if m is not None:
                state = "ours"
                labels[0] = labels[0] or (m.group(1) or "").strip()
                continue
            ours.append(line)
            theirs.append(line)
        elif state in ("ours", "base"):
            if _SEP.fullmatch(bare):
                state = "theirs"
            elif state == "ours" and _BASE.fullmatch(bare):
                state = "base"
            elif _OPEN.fullmatch(bare) or _CLOSE.fullmatch(bare):
                return None
            elif state == "ours":
                ours.append(line)
        else:
            m = _CLOSE.fullmatch(bare)
            if m is not None:
                state = "both"
                hunks += 1
                labels[1] = labels[1] or (m.group(1) or "").strip()
                continue
            if _OPEN.fullmatch(bare) or _SEP.fullmatch(bare):
                return None
            theirs.append(line)
    if state != "both" or hunks == 0:
        return None
    # The labels come from the file (a hostile clone can write anything there): one short line.
    return ConflictSides(
        ours="".join(ours),
        theirs="".join(theirs),
        ours_label=sanitize_line(labels[0], 60),
        theirs_label=sanitize_line(labels[1], 60),
    )

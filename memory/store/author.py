"""Who writes a card, and what a shared card must not say about them.

``author`` is the person's git ``user.name`` (nothing else: no e-mail), read with ``git config``
where the card is written: the workspace for a project card, the user store's home for a user
card. A project card is pushed to everyone who clones the repository, so the person's home path
is written as ``~`` in it.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from memory.text.names import sanitize_line

__all__ = ["git_user_name", "tilde_home"]

MAX_AUTHOR = 100
# ``git config`` is a few milliseconds; a batch must not pay it every time, but a name set
# while the app runs is picked up soon after.
_TTL_S = 30.0
_NAMES: dict[tuple[str, ...], tuple[float, str]] = {}
_ENV_KEYS = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM")


def git_user_name(cwd: Path) -> str:
    """The ``user.name`` git would use in ``cwd`` (one sanitized line), or "" when unset, git is
    missing, or ``cwd`` does not exist."""
    key = (str(cwd), *(os.environ.get(k, "") for k in _ENV_KEYS))
    now = time.monotonic()
    hit = _NAMES.get(key)
    if hit is not None and now - hit[0] < _TTL_S:
        return hit[1]
    name = _read_name(cwd)
    _NAMES[key] = (now, name)
    return name


def _read_name(cwd: Path) -> str:
    if not cwd.is_dir():
        return ""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            ["git", "config", "--get", "user.name"],
            cwd=cwd,
            env=env,
            capture_output=True,
            timeout=5,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    if done.returncode != 0:
        return ""
    # A repository's own config can set anything: one short plain line.
    return sanitize_line(done.stdout.decode("utf-8", "replace"), MAX_AUTHOR)


def _homes() -> list[str]:
    """The person's home as written (``$HOME``) and as resolved, longest first; never ``/``."""
    out: set[str] = set()
    raw = os.environ.get("HOME") or str(Path.home())
    for h in (raw, os.path.realpath(raw)):
        h = h.rstrip("/")
        if h and os.path.isabs(h) and h.count("/") >= 1 and len(h) > 1:
            out.add(h)
    return sorted(out, key=len, reverse=True)


def tilde_home(text: str) -> str:
    """``text`` with the person's home path written ``~`` wherever it stands as a whole path
    component (``/home/ann/src`` -> ``~/src``; ``/home/anna`` is left alone for ``/home/ann``)."""
    for home in _homes():
        if home not in text:
            continue
        # Not inside a longer name: "/home/ann" is not in "/home/anna" or "/home/ann.bak", but a
        # sentence may end right after it.
        text = re.sub(rf"(?<![\w.\-/]){re.escape(home)}(?![\w\-]|\.[\w\-])", "~", text)
    return text

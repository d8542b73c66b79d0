"""The memory core's names and limits, apart from its data contracts.

Why a module of its own: the app's first frame, the terminal filter and the CLI's parser need
these and nothing of ``memory.model``, whose pydantic models cost more to import than the rest
of the first frame's own code.
"""

from __future__ import annotations

from enum import StrEnum


class Level(StrEnum):
    PROJECT = "project"
    USER = "user"


class NoteType(StrEnum):
    USER_PREFERENCE = "user_preference"
    CORRECTION_FEEDBACK = "correction_feedback"
    PROJECT_KNOWLEDGE = "project_knowledge"
    REFERENCE_MATERIAL = "reference_material"


class MemoryMode(StrEnum):
    """What happens to a turn's memory: applied at once, held for review, or not extracted."""

    AUTO = "auto"
    REVIEW = "review"
    OFF = "off"


MEMORY_MODES: tuple[str, ...] = tuple(m.value for m in MemoryMode)

# The tag that carries index changes to the main model, and that extraction defuses in a turn.
UPDATE_TAG = "memory-update"


class Action(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    NOOP = "noop"


# Limits of the merged index and of what one op or one batch may hold.
MAX_OPS = 50
MAX_CONTENT_BYTES = 16 * 1024
MAX_TITLE = 100
MAX_SUMMARY = 200
MAX_SLUG = 48
INDEX_MAX_LINES = 200
INDEX_MAX_BYTES = 25_600
INDEX_FILE = "MEMORY.md"
MANUAL_SOURCE = "manual"

# `pseudoclaude memory worker` exits with this when another process holds the workspace's worker
# lock (EX_TEMPFAIL): the app that started it does not count it as a death.
WORKER_EXIT_BUSY = 75

"""Segments for the widgets that draw their own strips (the Line API).

Every segment gets a Style: Textual's NO_COLOR filter (``Monochrome``, see https://no-color.org)
reads each segment's colours and crashes the frame on a segment without one, and Rich leaves
some unstyled (``Text.render`` of a text without spans ignores ``Text.style``; the padding and
line ends of ``Console.render_lines``).
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.segment import Segment
from rich.style import Style

__all__ = ["styled"]

_NULL = Style.null()


def styled(segments: Iterable[Segment], style: Style | None = None) -> list[Segment]:
    """``segments`` with each one that has no style given ``style`` (the null style by default)."""
    fill = _NULL if style is None else style
    return [
        segment if segment.style is not None else Segment(segment.text, fill, segment.control)
        for segment in segments
    ]

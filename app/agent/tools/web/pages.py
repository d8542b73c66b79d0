"""What a fetched body is for the model: HTML becomes Markdown (markdownify over BeautifulSoup's
tree, with scripts, styles, navigation and hidden elements dropped first), text and JSON stay as
they are (decoded by the charset given), an image is an image; anything else is only named.

Blocking (parsing a large page takes a while): call from a worker thread."""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING, Literal
from urllib.parse import urljoin

if TYPE_CHECKING:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

__all__ = ["BodyKind", "body_kind", "decode_text", "html_to_markdown", "media_type"]

BodyKind = Literal["html", "text", "image", "other"]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-ndjson",
    }
)
# Elements that are no part of what a page says: code, styling, navigation, forms, embeds.
DROPPED = (
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "frame",
    "object",
    "embed",
    "canvas",
    "svg",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "button",
    "head",
    "meta",
    "link",
)
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_BLANK_RUNS = re.compile(r"\n{3,}")
_TRAILING = re.compile(r"[ \t]+$", re.MULTILINE)
# Control characters other than tab and line feed: noise in a page, never meant for the model.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def media_type(header: str | None) -> tuple[str, str | None]:
    """A ``Content-Type`` header's media type (lower case) and its charset, if it names one."""
    if not header:
        return "", None
    kind, *params = header.split(";")
    charset = None
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'").lower() or None
    return kind.strip().lower(), charset


def body_kind(media: str, body: bytes) -> tuple[BodyKind, str]:
    """What the body is, and its media type (sniffed when the server gave none or a generic
    one)."""
    if media in ("", "application/octet-stream", "binary/octet-stream"):
        media = _sniff(body) or media
    if media in _HTML_TYPES:
        return "html", media
    if media in IMAGE_TYPES:
        return "image", media
    if media.startswith("text/") or media in _TEXT_TYPES or media.endswith(("+json", "+xml")):
        return "text", media
    return "other", media


def _sniff(body: bytes) -> str | None:
    for magic, media in _MAGIC:
        if body.startswith(magic):
            return media
    if body[:4] == b"RIFF" and body[8:12] == b"WEBP":
        return "image/webp"
    start = body[:1024].lstrip().lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return "text/html"
    return None


def decode_text(body: bytes, charset: str | None) -> str:
    """``body`` as text: by ``charset`` when it is one Python knows, else UTF-8 (a byte order
    mark says which UTF it is); bytes that do not decode become U+FFFD."""
    encoding = "utf-8"
    if charset:
        try:
            encoding = codecs.lookup(charset).name
        except LookupError:
            pass
    if body.startswith(codecs.BOM_UTF8):
        encoding, body = "utf-8", body[len(codecs.BOM_UTF8) :]
    elif body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    return tidy(body.decode(encoding, "replace"))


def tidy(text: str) -> str:
    """Line breaks as ``\\n``, no control characters, no trailing blanks, no runs of blank lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    return _BLANK_RUNS.sub("\n\n", _TRAILING.sub("", text)).strip("\n")


def html_to_markdown(body: bytes, charset: str | None, base: str) -> str:
    """An HTML page as Markdown: its title as a heading, links kept (made absolute against
    ``base``, the URL read), and nothing of its scripts, styles, navigation, forms or hidden
    elements."""
    # BeautifulSoup and markdownify are imported with the first page fetched, never at start-up.
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(body, "html.parser", from_encoding=charset)
    title = soup.title.get_text(" ", strip=True) if soup.title is not None else ""
    _strip(soup)
    _absolute_links(soup, base)
    try:
        text = _converter().convert_soup(soup.body if soup.body is not None else soup)
    except RecursionError:  # nested too deeply to convert: its words, without the Markdown
        text = soup.get_text("\n")
    text = tidy(text)
    title = " ".join(title.split())
    if title and not text.lstrip("# ").startswith(title):
        text = f"# {title}\n\n{text}"
    return text


def _strip(soup: BeautifulSoup) -> None:
    hidden = [
        *soup.find_all(True, attrs={"hidden": True}),
        *soup.find_all(True, attrs={"aria-hidden": "true"}),
    ]
    for tag in [*soup.find_all(list(DROPPED)), *hidden, *soup.find_all("title")]:
        if not tag.decomposed:
            tag.decompose()


def _absolute_links(soup: BeautifulSoup, base: str) -> None:
    for tag, attr in (("a", "href"), ("img", "src")):
        for el in soup.find_all(tag):
            value = el.get(attr)
            if not isinstance(value, str):
                continue
            try:
                if value.strip().lower().startswith(("javascript:", "data:", "vbscript:")):
                    raise ValueError("code or inline data: no place for the model to go")
                el[attr] = urljoin(base, value.strip())
            except ValueError:
                if tag == "img":  # an image with nowhere to find it is its description
                    alt = el.get("alt")
                    el.replace_with(f" {alt} " if isinstance(alt, str) and alt.strip() else "")
                else:
                    del el[attr]


def _converter() -> MarkdownConverter:
    # markdownify is imported with the first page fetched, never at start-up.
    from markdownify import MarkdownConverter

    return MarkdownConverter(
        heading_style="ATX",
        bullets="-",
        escape_underscores=False,  # identifiers in documentation stay readable (snake_case)
        escape_asterisks=False,
        strip_document="strip",
    )

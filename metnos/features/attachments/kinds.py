"""What a sent file is, decided from its bytes: photos, scans, PDFs and plain text.

A file's name and the type a client declares are claims; the bytes decide. A claim that
contradicts the bytes (a `.jpg` that is a PDF, an `image/png` that is text) is a lie and the
file is refused, never relabelled. Only the header is read here (magic numbers, and a photo's
width and height from its first chunks): no image is decoded outside the sandbox.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

KINDS = ("jpeg", "png", "heic", "webp", "tiff", "pdf", "text")
IMAGES = frozenset({"jpeg", "png", "heic", "webp", "tiff"})
EXTENSION = {"jpeg": "jpg", "png": "png", "heic": "heic", "webp": "webp", "tiff": "tiff",
             "pdf": "pdf", "text": "txt"}
# what a name's extension or a declared media type claims; what is not here claims nothing
_BY_EXTENSION = {
    "jpg": "jpeg", "jpeg": "jpeg", "jpe": "jpeg", "jfif": "jpeg", "png": "png",
    "heic": "heic", "heif": "heic", "hif": "heic", "webp": "webp", "tif": "tiff",
    "tiff": "tiff", "pdf": "pdf", "txt": "text", "text": "text", "md": "text", "csv": "text",
    "log": "text", "gif": "gif", "bmp": "bmp", "doc": "doc", "docx": "docx", "xls": "xls",
    "xlsx": "xlsx", "zip": "zip", "exe": "exe", "html": "html", "htm": "html", "svg": "svg",
}
_BY_MEDIA_TYPE = {
    "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/pjpeg": "jpeg", "image/png": "png",
    "image/heic": "heic", "image/heif": "heic", "image/heic-sequence": "heic",
    "image/webp": "webp", "image/tiff": "tiff", "application/pdf": "pdf",
    "text/plain": "text", "text/markdown": "text", "text/csv": "text", "image/gif": "gif",
    "text/html": "html", "image/svg+xml": "svg", "application/zip": "zip",
}
_HEIF_BRANDS = frozenset({b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"hevm",
                          b"hevs", b"mif1", b"msf1"})
_TEXT_SAMPLE = 64 << 10
# the bytes a text may hold: printable ASCII, tab, line breaks, form feed, and 0x80-0xFF
_TEXT_BYTES = bytes([9, 10, 12, 13, *range(32, 127), *range(128, 256)])
# JPEG start-of-frame markers (baseline, progressive, lossless...; not DHT/JPG/DAC)
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


@dataclass(frozen=True)
class Sniffed:
    """What the bytes are, and a photo's size when its header says it."""

    kind: str
    width: int | None = None
    height: int | None = None

    @property
    def image(self) -> bool:
        return self.kind in IMAGES


def sniff(data: bytes) -> Sniffed | None:
    """The kind of `data` from its first bytes; None when it is none of KINDS."""
    head = data[:32]
    if head.startswith(b"\xff\xd8\xff"):
        return Sniffed("jpeg", *_jpeg_size(data))
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return Sniffed("png", *_png_size(data))
    if head[4:8] == b"ftyp" and head[8:12] in _HEIF_BRANDS:
        return Sniffed("heic")
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return Sniffed("webp")
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return Sniffed("tiff")
    if head.startswith(b"%PDF-"):
        return Sniffed("pdf")
    if _is_text(data):
        return Sniffed("text")
    return None


def claimed(name: str, media_type: str | None) -> set[str]:
    """The kinds the name's extension and the declared media type claim (empty: no claim)."""
    claims: set[str] = set()
    stem, dot, extension = name.rpartition(".")
    if dot and stem and extension.lower() in _BY_EXTENSION:
        claims.add(_BY_EXTENSION[extension.lower()])
    media = (media_type or "").split(";", 1)[0].strip().lower()
    if media in _BY_MEDIA_TYPE:
        claims.add(_BY_MEDIA_TYPE[media])
    return claims


def _is_text(data: bytes) -> bool:
    """Printable characters and line breaks only (no control byte but tab, line breaks and
    form feed), as UTF-8 or as an older single-byte text (Latin-1, Windows-1252: a note
    saved on an old computer)."""
    sample = data[:_TEXT_SAMPLE]
    if not sample or sample.translate(None, _TEXT_BYTES):
        return False
    if len(data) > _TEXT_SAMPLE:  # the cut may split a character: drop up to three bytes
        return any(_utf8(sample[:end]) for end in range(len(sample), len(sample) - 4, -1)) \
            or _single_byte(sample)
    return _utf8(sample) or _single_byte(sample)


def _single_byte(sample: bytes) -> bool:
    """A text that is not UTF-8 is single-byte when at most a quarter of its bytes are above
    ASCII: accented letters are a few, a binary file's are about half."""
    high = sum(1 for byte in sample if byte >= 0x80)
    return high * 4 <= len(sample)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _png_size(data: bytes) -> tuple[int | None, int | None]:
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None, None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _jpeg_size(data: bytes) -> tuple[int | None, int | None]:
    """Width and height from the first start-of-frame segment, walking the segments."""
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None, None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2:at + 4])
        if marker in _SOF and at + 9 <= len(data):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        if length < 2:
            return None, None
        at += 2 + length
    return None, None

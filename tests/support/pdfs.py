"""Real PDF files for tests, written byte by byte (no generator library).

- `text_pdf(path, pages)`: one page per string, each with a text layer in Helvetica that
  pypdf extracts back (lines split on "\\n").
- `image_only_pdf(path, pages=1)`: pages that draw only a tiny DeviceGray image XObject, no
  text at all (what a scanner makes).
- `encrypted_pdf(path)`: a text PDF encrypted with a user password (pypdf's writer).
"""

from __future__ import annotations

import zlib
from pathlib import Path

_HEADER = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"


def _escape(text: str) -> bytes:
    raw = text.encode("latin-1", errors="replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _text_stream(text: str) -> bytes:
    lines = text.split("\n") or [""]
    body = [b"BT", b"/F1 12 Tf", b"14 TL", b"72 720 Td"]
    for index, line in enumerate(lines):
        if index:
            body.append(b"T*")
        body.append(b"(" + _escape(line) + b") Tj")
    body.append(b"ET")
    return b"\n".join(body)


def _stream(content: bytes, extra: bytes = b"") -> bytes:
    return (
        b"<< /Length " + str(len(content)).encode() + extra + b" >>\nstream\n"
        + content + b"\nendstream"
    )


def _write(path: Path, objects: list[bytes]) -> Path:
    """Objects are numbered 1..n in order; object 1 is the catalog."""
    out = bytearray(_HEADER)
    offsets: list[int] = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += str(number).encode() + b" 0 obj\n" + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 " + str(len(objects) + 1).encode() + b"\n0000000000 65535 f \n"
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        b"trailer\n<< /Size " + str(len(objects) + 1).encode() + b" /Root 1 0 R >>\n"
        b"startxref\n" + str(xref).encode() + b"\n%%EOF\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))
    return path


def _document(page_bodies: list[bytes], resources: bytes) -> list[bytes]:
    """Catalog (1), pages (2), shared resource object (3), then page+content pairs."""
    kids = [f"{4 + 2 * i} 0 R".encode() for i in range(len(page_bodies))]
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + b" ".join(kids) + b"] /Count "
        + str(len(page_bodies)).encode() + b" >>",
        resources,
    ]
    for index, content in enumerate(page_bodies):
        content_ref = f"{5 + 2 * index} 0 R".encode()
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources 3 0 R /Contents " + content_ref + b" >>"
        )
        objects.append(_stream(content))
    return objects


def text_pdf(path: Path, pages: list[str]) -> Path:
    """A PDF with one page per string, each with an extractable text layer."""
    if not pages:
        raise ValueError("a PDF needs at least one page")
    font = b"<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>"
    return _write(path, _document([_text_stream(page) for page in pages], font))


def image_only_pdf(path: Path, pages: int = 1) -> Path:
    """A PDF whose pages draw one 4x4 DeviceGray image each and hold no text."""
    if pages < 1:
        raise ValueError("a PDF needs at least one page")
    pixels = zlib.compress(bytes([0, 64, 128, 255] * 4))
    draw = b"q 200 0 0 200 72 500 cm /Im1 Do Q"
    bodies = [draw] * pages
    image_ref = str(4 + 2 * pages).encode() + b" 0 R"
    objects = _document(bodies, b"<< /XObject << /Im1 " + image_ref + b" >> >>")
    objects.append(
        _stream(
            pixels,
            b" /Type /XObject /Subtype /Image /Width 4 /Height 4 /ColorSpace /DeviceGray"
            b" /BitsPerComponent 8 /Filter /FlateDecode",
        )
    )
    return _write(path, objects)


def encrypted_pdf(path: Path, text: str = "secret", password: str = "pw") -> Path:
    """A text PDF encrypted with a user password (RC4: no crypto package needed)."""
    from pypdf import PdfReader, PdfWriter

    plain = text_pdf(path.with_suffix(".plain.pdf"), [text])
    writer = PdfWriter()
    for page in PdfReader(plain).pages:
        writer.add_page(page)
    writer.encrypt(user_password=password, algorithm="RC4-128")
    with path.open("wb") as handle:
        writer.write(handle)
    plain.unlink()
    return path

"""A `multipart/form-data` body read with the standard library's email parser: what the
scripted servers need of an upload (OpenAI's transcription endpoint takes one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP


@dataclass(frozen=True)
class Upload:
    """The form's text fields, and its file (the first part with a file name), if any."""

    fields: dict[str, str] = field(default_factory=dict)
    filename: str = ""
    file: bytes = b""


def parse_form(raw: bytes, content_type: str) -> Upload:
    """The parts of `raw`, a `multipart/form-data` body sent with `content_type`."""
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + raw)
    fields: dict[str, str] = {}
    filename, data = "", b""
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        body = payload if isinstance(payload, bytes) else b""
        if part.get_filename() is not None and not filename:
            filename, data = part.get_filename() or "", body
        elif isinstance(name, str):
            fields[name] = body.decode("utf-8", "replace")
    return Upload(fields, filename, data)

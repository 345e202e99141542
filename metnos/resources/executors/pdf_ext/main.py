"""pdf_ext: the text of a workspace PDF, page by page (Metnos executor, read-only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
The cwd is the workspace; paths are workspace-relative. The PDF is read with `pypdf` (pure
Python), which the sandbox binds read-only under /home/metnos/pylib (manifest `[sandbox]
python_packages`). A PDF with pages but no text layer at all (a scan) says `image_only`:
only an OCR could read it. A file that is not a PDF, and an encrypted PDF that cannot be
opened without a password, are refused with their own keys.
"""

import logging
import os
import sys

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper and pypdf
from metnos_sandbox_protocol import Refused, permission_denied, safe_path, serve  # noqa: E402

MAX_STDIN = 64 << 10
MAX_FILE_BYTES = 64 << 20
MAX_PAGE_CHARS = 20_000
MAX_TEXT_CHARS = 100_000  # pages and text both carry it: the result stays under 1 MB
DEFAULT_MAX_PAGES = 50
MAX_PAGES = 500
ARGS = {"path", "max_pages"}


def get_max_pages(args):
    value = args.get("max_pages")
    if value is None:
        return DEFAULT_MAX_PAGES
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PAGES:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="max_pages")
    return value


def open_pdf(path):
    """The file's bytes, after checking it is a regular file that starts like a PDF."""
    if not os.path.lexists(path):
        raise Refused("ERR_FILE_NOT_FOUND", path=path)
    if os.path.isdir(path):
        raise Refused("ERR_FILE_IS_DIRECTORY", path=path)
    if os.path.getsize(path) > MAX_FILE_BYTES:
        raise Refused("ERR_PDF_TOO_LARGE", path=path, max_mb=MAX_FILE_BYTES >> 20)
    with open(path, "rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if b"%PDF-" not in data[:1024]:
        raise Refused("ERR_PDF_NOT_PDF", path=path)
    return data


def load_pypdf():
    try:
        import pypdf
    except ImportError as exc:
        raise Refused("ERR_PDF_UNAVAILABLE", reason=str(exc)[:200]) from None
    logging.getLogger("pypdf").setLevel(logging.CRITICAL)  # its warnings are not the result
    return pypdf


def reader_for(pypdf, data, path):
    import io

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
    except Exception as exc:  # pypdf's own errors and the ones of a broken file alike
        raise Refused("ERR_PDF_UNREADABLE", path=path, reason=type(exc).__name__) from None
    if reader.is_encrypted:
        try:  # many invoices are only owner-locked: an empty user password opens them
            opened = reader.decrypt("")
        except Exception:  # e.g. AES without a crypto library: it stays locked
            opened = 0
        if not opened:
            raise Refused("ERR_PDF_ENCRYPTED", path=path)
    return reader


def page_texts(reader, path, max_pages):
    texts, total = [], 0
    try:
        pages = reader.pages
        count = len(pages)
        for index in range(min(count, max_pages)):
            text = (pages[index].extract_text() or "")[:MAX_PAGE_CHARS]
            text = text[: max(0, MAX_TEXT_CHARS - total)]
            total += len(text)
            texts.append(text)
    except MemoryError:
        raise Refused("ERR_PDF_TOO_LARGE", path=path, max_mb=MAX_FILE_BYTES >> 20) from None
    except Exception as exc:
        raise Refused("ERR_PDF_UNREADABLE", path=path, reason=type(exc).__name__) from None
    return texts, count


def run(args):
    path = safe_path(args.get("path"), "path")
    max_pages = get_max_pages(args)
    data = open_pdf(path)
    reader = reader_for(load_pypdf(), data, path)
    pages, count = page_texts(reader, path, max_pages)
    image_only = count > 0 and not any(page.strip() for page in pages)
    return {
        "path": path,
        "pages": pages,
        "text": "\n\n".join(pages).strip(),
        "page_count": count,
        "image_only": image_only,
        "truncated": count > len(pages) or sum(map(len, pages)) >= MAX_TEXT_CHARS,
        "reply": "image_only" if image_only else "text",
    }


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN, errors={PermissionError: permission_denied})

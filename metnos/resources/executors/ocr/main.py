"""ocr: the text of a workspace photo or scan (Metnos executor, read-only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
The cwd is the workspace; paths are workspace-relative. The engine is Debian's tesseract
(`tesseract-ocr`, with `tesseract-ocr-ita` and `tesseract-ocr-eng`), seen inside the sandbox
through the read-only /usr; nothing is downloaded. A HEIC photo is first converted to PNG
under the run's private /tmp with libheif's tool (`libheif-examples`); a scanned PDF's pages
(at most MAX_PAGES) are rendered there by poppler's `pdftoppm` (`poppler-utils`) and read in
one run. The type comes from the file's first bytes, never from its name: tesseract reads a
file that is no image as a list of file names to open, so anything else is refused before
it runs (the list a PDF's pages make is written here, naming only those pages). Page segmentation
with orientation detection (`--psm 1`, the `osd` data) reads a photo taken sideways.
"""

import os
import subprocess
import sys
import tempfile
import time

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import FILE_ERRORS, Refused, get_arg, safe_path, serve  # noqa: E402

MAX_STDIN = 64 << 10
MAX_FILE_BYTES = 40 << 20
MAX_PIXELS = 50_000_000  # a 48-megapixel phone photo; tesseract's memory grows with it
MAX_TEXT_CHARS = 100_000
MAX_PAGES = 10  # of a scanned PDF: a bill or a letter is a few pages
PDF_DPI = 200  # an A4 page at 200 dpi is ~3.9 megapixels: enough for print
DEADLINE_S = 55  # the manifest's timeout_s is 60: the run answers before it is killed
LANGS = {"it": "ita", "en": "eng", "it+en": "ita+eng"}
DEFAULT_LANG = "it+en"
TESSDATA_ROOT = "/usr/share/tesseract-ocr"  # Debian: <root>/<version>/tessdata
PACKAGES = {"tesseract": "tesseract-ocr (tesseract-ocr-ita, tesseract-ocr-eng)",
            "ita": "tesseract-ocr-ita", "eng": "tesseract-ocr-eng", "osd": "tesseract-ocr-osd",
            "heif": "libheif-examples", "poppler": "poppler-utils"}
HEIF_TOOLS = ("heif-dec", "heif-convert")  # libheif >= 1.17 names it heif-dec
HEIF_BRANDS = {b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx"}
ENGINE_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_THREAD_LIMIT": "1"}
SOF_MARKERS = set(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
ARGS = {"path", "lang"}


def get_langs(args):
    value = get_arg(args, "lang", str, DEFAULT_LANG).strip().lower().replace(" ", "")
    if value not in LANGS:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="lang")
    return LANGS[value]


def read_image(path):
    """The file's bytes, after checking it is a regular file that is not too large."""
    if not os.path.lexists(path):
        raise Refused("ERR_FILE_NOT_FOUND", path=path)
    if os.path.isdir(path):
        raise Refused("ERR_FILE_IS_DIRECTORY", path=path)
    if os.path.getsize(path) > MAX_FILE_BYTES:
        raise Refused("ERR_OCR_TOO_LARGE", path=path, max_mb=MAX_FILE_BYTES >> 20,
                      max_mpx=MAX_PIXELS // 1_000_000)
    with open(path, "rb") as handle:
        return handle.read(MAX_FILE_BYTES + 1)


def image_kind(data):
    """The image type the bytes start with, or None."""
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data[4:8] == b"ftyp":
        size = min(int.from_bytes(data[:4], "big"), 256)
        brands = {data[i:i + 4] for i in range(8, size, 4)} - {b"\x00\x00\x00\x00"}
        if brands & HEIF_BRANDS or (b"mif1" in brands and not brands & {b"avif", b"avis"}):
            return "heic"
    return None


def _u(data, start, length, order="big"):
    return int.from_bytes(data[start:start + length], order)


def jpeg_size(data):
    i = 2
    while i + 9 <= len(data) and data[i] == 0xFF:
        marker = data[i + 1]
        if marker == 0xFF:  # a fill byte
            i += 1
        elif marker == 0x01 or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
        elif marker in SOF_MARKERS:
            return _u(data, i + 7, 2), _u(data, i + 5, 2)
        elif marker == 0xDA:  # the scan starts before any frame header: broken
            return None
        else:
            i += 2 + _u(data, i + 2, 2)
    return None


def tiff_size(data):
    order = "little" if data[:2] == b"II" else "big"
    ifd = _u(data, 4, 4, order)
    found = {}
    for n in range(min(_u(data, ifd, 2, order), 512)):
        entry = ifd + 2 + 12 * n
        tag, kind = _u(data, entry, 2, order), _u(data, entry + 2, 2, order)
        if tag in (256, 257) and kind in (3, 4):  # ImageWidth, ImageLength: SHORT or LONG
            found[tag] = _u(data, entry + 8, 2 if kind == 3 else 4, order)
    return (found[256], found[257]) if len(found) == 2 else None


def webp_size(data):
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        return _u(data, 26, 2, "little") & 0x3FFF, _u(data, 28, 2, "little") & 0x3FFF
    if chunk == b"VP8L" and data[20:21] == b"\x2f":
        bits = _u(data, 21, 4, "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return _u(data, 24, 3, "little") + 1, _u(data, 27, 3, "little") + 1
    return None


def _boxes(data, start, end):
    """The ISO-BMFF boxes between `start` and `end`: (type, body start, box end)."""
    while start + 8 <= end:
        size, kind, header = _u(data, start, 4), data[start + 4:start + 8], 8
        if size == 1:
            size, header = _u(data, start + 8, 8), 16
        elif size == 0:
            size = end - start
        if size < header or start + size > end:
            return
        yield kind, start + header, start + size
        start += size


def heic_size(data):
    """The largest `ispe` (image spatial extents) of the file: the full image, not a tile
    or the thumbnail."""
    sizes = []
    for kind, body, end in _boxes(data, 0, len(data)):
        if kind != b"meta":
            continue
        for child, cbody, cend in _boxes(data, body + 4, end):  # meta is a full box
            for prop, pbody, pend in (_boxes(data, cbody, cend) if child == b"iprp" else ()):
                for item, ibody, _ in (_boxes(data, pbody, pend) if prop == b"ipco" else ()):
                    if item == b"ispe":
                        sizes.append((_u(data, ibody + 4, 4), _u(data, ibody + 8, 4)))
    return max(sizes, key=lambda s: s[0] * s[1]) if sizes else None


def image_size(kind, data):
    if kind == "png":
        return (_u(data, 16, 4), _u(data, 20, 4)) if data[12:16] == b"IHDR" else None
    parse = {"jpeg": jpeg_size, "tiff": tiff_size, "webp": webp_size, "heic": heic_size}[kind]
    try:
        size = parse(data)
    except (IndexError, ValueError):
        return None
    return size if size and size[0] > 0 and size[1] > 0 else None


def find_tool(names, package):
    for folder in ENGINE_ENV["PATH"].split(":"):
        for name in names:
            tool = os.path.join(folder, name)
            if os.access(tool, os.X_OK):
                return tool
    raise Refused("ERR_OCR_UNAVAILABLE", package=PACKAGES[package])


def check_tessdata(langs):
    """Refused naming the Debian package of the first language data that is missing."""
    try:
        roots = [os.path.join(TESSDATA_ROOT, v, "tessdata") for v in os.listdir(TESSDATA_ROOT)]
    except OSError:
        roots = []
    for lang in [*langs.split("+"), "osd"]:
        if not any(os.path.isfile(os.path.join(r, f"{lang}.traineddata")) for r in roots):
            raise Refused("ERR_OCR_UNAVAILABLE", package=PACKAGES[lang])


def call(argv, path, deadline):
    """Run one engine tool with a clean environment: its standard output; Refused when it
    fails or is too slow."""
    left = deadline - time.monotonic()
    try:
        done = subprocess.run(argv, env=ENGINE_ENV, stdin=subprocess.DEVNULL,  # noqa: S603
                              capture_output=True, timeout=max(left, 1), check=False)
    except subprocess.TimeoutExpired:
        raise Refused("ERR_OCR_TIMEOUT", path=path, seconds=DEADLINE_S) from None
    if done.returncode < 0:  # killed: out of memory (std::bad_alloc aborts) or of CPU time
        raise Refused("ERR_OCR_TOO_LARGE", path=path, max_mb=MAX_FILE_BYTES >> 20,
                      max_mpx=MAX_PIXELS // 1_000_000)
    if done.returncode != 0:
        name = os.path.basename(argv[0])
        raise Refused("ERR_OCR_UNREADABLE", path=path, reason=f"{name} {done.returncode}")
    return done.stdout


def heic_to_png(path, workdir, deadline):
    """The HEIC photo as a PNG under the run's /tmp (its primary image, or the first)."""
    tool = find_tool(HEIF_TOOLS, "heif")
    call([tool, os.path.join(".", path), os.path.join(workdir, "photo.png")], path, deadline)
    for name in ("photo.png", "photo-1.png"):  # several top-level images: numbered
        if os.path.isfile(os.path.join(workdir, name)):
            return os.path.join(workdir, name)
    raise Refused("ERR_OCR_UNREADABLE", path=path, reason="heif")


def read_tsv(tsv):
    """(words, mean confidence) from tesseract's TSV: word rows are level 5."""
    confidences = []
    for line in tsv.splitlines()[1:]:
        cells = line.split("\t", 11)
        if len(cells) == 12 and cells[0] == "5" and cells[11].strip():
            try:
                confidences.append(min(max(float(cells[10]), 0.0), 100.0))
            except ValueError:
                continue
    mean = round(sum(confidences) / len(confidences)) if confidences else 0
    return len(confidences), mean


def recognise(tool, image, langs, workdir, path, deadline):
    """The text and the TSV tesseract writes for `image` (one run, two renderers)."""
    base = os.path.join(workdir, "out")
    call([tool, image, base, "-l", langs, "--psm", "1", "txt", "tsv"], path, deadline)
    texts = []
    for ext in ("txt", "tsv"):
        with open(f"{base}.{ext}", encoding="utf-8", errors="replace") as handle:
            texts.append(handle.read())
    return texts[0].replace("\f", "\n").strip(), texts[1]


def pdf_pages(path, workdir, deadline):
    """The scanned PDF's first MAX_PAGES pages as PNGs under the run's /tmp, in order, and
    how many pages it has."""
    info = call([find_tool(("pdfinfo",), "poppler"), os.path.join(".", path)], path, deadline)
    count = 0
    for line in info.decode("utf-8", "replace").splitlines():
        if line.startswith("Pages:") and line[6:].strip().isdigit():
            count = int(line[6:].strip())
    if count < 1:
        raise Refused("ERR_OCR_UNREADABLE", path=path, reason="pdf")
    render = find_tool(("pdftoppm",), "poppler")
    call([render, "-r", str(PDF_DPI), "-gray", "-png", "-l", str(MAX_PAGES),
          os.path.join(".", path), os.path.join(workdir, "page")], path, deadline)
    pages = sorted(n for n in os.listdir(workdir) if n.startswith("page") and n.endswith(".png"))
    if not pages:
        raise Refused("ERR_OCR_UNREADABLE", path=path, reason="pdf")
    return [os.path.join(workdir, n) for n in pages], count


def png_size(path):
    with open(path, "rb") as handle:
        return image_size("png", handle.read(32))


def run(args):
    deadline = time.monotonic() + DEADLINE_S
    path = safe_path(args.get("path"), "path")
    langs = get_langs(args)
    data = read_image(path)
    kind = image_kind(data)
    if kind is None:
        raise Refused("ERR_OCR_NOT_IMAGE", path=path)
    size = None if kind == "pdf" else image_size(kind, data)
    del data
    if size is None and kind != "pdf":
        raise Refused("ERR_OCR_UNREADABLE", path=path, reason=kind)
    if size is not None and size[0] * size[1] > MAX_PIXELS:
        raise Refused("ERR_OCR_TOO_LARGE", path=path, max_mb=MAX_FILE_BYTES >> 20,
                      max_mpx=MAX_PIXELS // 1_000_000)
    tesseract = find_tool(("tesseract",), "tesseract")
    check_tessdata(langs)
    count = 1
    with tempfile.TemporaryDirectory(prefix="ocr-") as workdir:
        if kind == "pdf":
            pages, count = pdf_pages(path, workdir, deadline)
            size = png_size(pages[0]) or (0, 0)
            image = os.path.join(workdir, "pages.txt")  # tesseract reads a list of images
            with open(image, "w", encoding="utf-8") as handle:
                handle.write("".join(f"{page}\n" for page in pages))
        else:
            image = heic_to_png(path, workdir, deadline) if kind == "heic" else \
                os.path.join(".", path)
        text, tsv = recognise(tesseract, image, langs, workdir, path, deadline)
    words, confidence = read_tsv(tsv)
    has_text = words > 0 and bool(text)
    return {
        "path": path, "text": text[:MAX_TEXT_CHARS], "kind": kind,
        "width": size[0], "height": size[1], "pages": count, "confidence": confidence,
        "words": words, "truncated": len(text) > MAX_TEXT_CHARS or count > MAX_PAGES,
        "reply": "text" if has_text else "no_text",
    }


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN, errors=FILE_ERRORS)

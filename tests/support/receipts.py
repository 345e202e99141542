"""Receipts as a phone photographs them, for the OCR tests: rendered from text with Pillow in
DejaVu (Debian's fonts-dejavu-core), then askew, noisy and blurred; and the Debian packages the
`ocr` executor reads them with, installed on demand (`tests.support.system`: under CI a
machine without them fails instead of skipping)."""

from __future__ import annotations

import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageFont

from tests.support.system import ensure_debian_binary, ensure_debian_file, skip_or_fail

TESSDATA = Path("/usr/share/tesseract-ocr/5/tessdata")
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
NEEDS = [(TESSDATA / "ita.traineddata", "tesseract-ocr-ita"),
         (TESSDATA / "eng.traineddata", "tesseract-ocr-eng"),
         (TESSDATA / "osd.traineddata", "tesseract-ocr-osd"), (FONT, "fonts-dejavu-core")]
RECEIPTS = {
    "it": (["SUPERMERCATO ROSSI", "Via Roma 12, Milano"],
           [("Pane integrale", "2,40"), ("Latte fresco", "1,85"), ("Mele golden", "3,20")],
           ("TOTALE EUR", "7,45"), "07/12/2026 10:42"),
    "en": (["CORNER GROCERY", "12 High Street, Bristol"],
           [("Brown bread", "2.40"), ("Fresh milk", "1.85"), ("Green apples", "3.20")],
           ("TOTAL GBP", "7.45"), "07/12/2026 10:42"),
}
WORDS = {"it": ["SUPERMERCATO", "ROSSI", "Pane", "Latte", "Mele", "TOTALE", "7,45", "07/12/2026"],
         "en": ["CORNER", "GROCERY", "bread", "milk", "apples", "TOTAL", "7.45", "07/12/2026"]}


def ensure_ocr() -> None:
    """tesseract with its Italian, English and orientation data, poppler's tools for scanned
    PDFs, and the receipts' font."""
    for binary, package in (("tesseract", "tesseract-ocr"), ("pdftoppm", "poppler-utils")):
        if ensure_debian_binary(binary, package) is None:
            skip_or_fail(f"{binary} (Debian package {package}) is not installed")
    for path, package in NEEDS:
        if not ensure_debian_file(path, package):
            skip_or_fail(f"{path} (Debian package {package}) is not installed")


def receipt(lang: str, size: int = 34) -> Image.Image:
    """A till receipt as printed: the shop, three priced lines, the total, the date."""
    head, items, total, date = RECEIPTS[lang]
    font = ImageFont.truetype(str(FONT), size)
    step = int(size * 1.6)
    image = Image.new("L", (900, 120 + step * (len(head) + len(items) + 4)), 246)
    draw = ImageDraw.Draw(image)
    y = 60
    for line in head:
        draw.text((60, y), line, font=font, fill=25)
        y += step
    y += step // 2
    for index, (name, price) in enumerate([*items, total]):
        y += step // 2 if index == len(items) else 0  # a gap before the total
        draw.text((60, y), name, font=font, fill=25)
        draw.text((840, y), price, font=font, fill=25, anchor="ra")
        y += step
    draw.text((60, y + step // 2), date, font=font, fill=25)
    return image


def photographed(image: Image.Image, angle: float, seed: int = 7) -> Image.Image:
    """`image` as a phone sees it: askew by `angle` degrees, a little blurred, with noise."""
    tilted = image.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=205)
    noise = Image.frombytes("L", tilted.size, random.Random(seed).randbytes(
        tilted.width * tilted.height))
    return Image.blend(tilted, noise, 0.12).filter(ImageFilter.GaussianBlur(0.8)).convert("RGB")

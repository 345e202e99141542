"""The PDF fixtures are real PDFs: pypdf reads the text layer back, or finds none."""

from __future__ import annotations

from pathlib import Path

import pypdf

from tests.support.pdfs import encrypted_pdf, image_only_pdf, text_pdf


def test_text_pdf_reads_back_per_page(tmp_path: Path) -> None:
    path = text_pdf(tmp_path / "f.pdf", ["Fattura n. 12\nTotale (EUR) 45,00", "Pagina due"])
    reader = pypdf.PdfReader(path, strict=True)
    assert [page.extract_text() for page in reader.pages] == [
        "Fattura n. 12\nTotale (EUR) 45,00",
        "Pagina due",
    ]


def test_image_only_pdf_has_an_image_and_no_text(tmp_path: Path) -> None:
    reader = pypdf.PdfReader(image_only_pdf(tmp_path / "scan.pdf", pages=2), strict=True)
    assert len(reader.pages) == 2
    for page in reader.pages:
        assert page.extract_text() == ""
        assert len(page.images) == 1


def test_encrypted_pdf_is_encrypted(tmp_path: Path) -> None:
    reader = pypdf.PdfReader(encrypted_pdf(tmp_path / "locked.pdf"))
    assert reader.is_encrypted
    assert not (tmp_path / "locked.plain.pdf").exists()

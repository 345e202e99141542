"""The synt's six stage prompts render in Italian and English with their variables (strict:
a missing one is an error), ask for JSON, and feed the previous error back when there is one."""

from __future__ import annotations

import pytest

from metnos.features.synt.stages import STAGES
from metnos.mechanisms import prompts

NEED = {"capability": "ocr", "have_kind": "pdf_image", "want_kind": "text", "src": "pdf_ext",
        "why": "the PDF has no text layer"}


@pytest.mark.parametrize("lang", ["it", "en"])
@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_renders_in_both_languages(stage: str, lang: str) -> None:
    extra = {"manifest": "name = \"ocr_pdf\"", "code": "print(1)", "report": {"passed": 1}} \
        if stage == "review" else {}
    served = prompts.resolve(f"synt_{stage}", lang)
    assert served.lang == lang
    text = prompts.get(f"synt_{stage}", lang, need=NEED, earlier="{}", error="", **extra)
    assert "JSON" in text and "pdf_image" in text and "{{" not in text
    again = prompts.get(f"synt_{stage}", lang, need=NEED, earlier="{}",
                        error="the answer is not JSON", **extra)
    assert "the answer is not JSON" in again and "the answer is not JSON" not in text
    with pytest.raises(Exception, match="undefined"):
        prompts.get(f"synt_{stage}", lang, need=NEED, error="", **extra)

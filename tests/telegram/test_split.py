"""Splitting long Telegram HTML: within the limit, on the best boundary, tags kept valid."""

from __future__ import annotations

import re

from metnos.faces.channels.render import render
from metnos.faces.channels.telegram.split import LIMIT, split_html, units


def _balanced(piece: str) -> bool:
    stack: list[str] = []
    for closing, name in re.findall(r"<(/?)([a-z]+)[^>]*>", piece):
        if closing:
            if not stack or stack.pop() != name:
                return False
        else:
            stack.append(name)
    return not stack


def test_short_text_is_one_piece_and_blank_is_none() -> None:
    assert split_html("ciao") == ["ciao"]
    assert split_html("  \n ") == []


def test_paragraphs_are_preferred_and_every_piece_fits() -> None:
    paragraphs = [f"{i:03d} " + "parola " * 120 for i in range(30)]  # ~850 chars each
    pieces = split_html("\n\n".join(paragraphs))
    assert len(pieces) > 1
    assert all(units(p) <= LIMIT for p in pieces)
    assert all(p.split(" ", 1)[0].isdigit() for p in pieces)  # each starts a paragraph
    assert " ".join(" ".join(pieces).split()) == " ".join(" ".join(paragraphs).split())


def test_never_inside_an_entity_and_tags_are_reopened() -> None:
    html = "<pre>" + "a &amp; b &lt;c&gt; " * 800 + "</pre>"
    pieces = split_html(html, limit=500)
    assert all(units(p) <= 500 for p in pieces)
    for piece in pieces:
        assert piece.startswith("<pre>") and piece.endswith("</pre>"), piece[:40]
        assert _balanced(piece)
        body = piece.removeprefix("<pre>").removesuffix("</pre>")
        assert not re.search(r"&[a-z]*$", body) and not re.match(r"^[a-z]*;", body)


def test_one_long_word_is_cut_anywhere_but_fits() -> None:
    pieces = split_html("x" * 10_000)
    assert [units(p) for p in pieces] == [4096, 4096, 1808]


def test_emoji_count_as_two_units() -> None:
    pieces = split_html("😀" * 3000)
    assert all(units(p) <= LIMIT for p in pieces) and "".join(pieces) == "😀" * 3000


def test_reply_template_escapes_what_the_model_wrote() -> None:
    html = render("telegram", "reply", "it", text="<b>not bold</b> & <script>")
    assert html == "&lt;b&gt;not bold&lt;/b&gt; &amp; &lt;script&gt;"

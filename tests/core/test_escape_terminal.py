"""`metnos.ground.escape.terminal` and `terminal_line` on arbitrary text (issue 25): whatever the
text, what comes out has no character a terminal acts on, and a terminal emulator (pyte) fed
with it stays as it was: no title, no mode, no scroll region, no colour, the cursor where
plain text leaves it."""

from __future__ import annotations

import json
import unicodedata

import pyte
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from metnos.ground.escape import terminal, terminal_json, terminal_line

BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# text rich in what terminals act on: ESC and C1 introducers, their parameter and final
# bytes, string terminators, CR/BS/BEL, bidi controls, separators, and ordinary letters
PIECES = st.sampled_from(["\x1b", "[", "]", "P", "\\", "\x07", "\x9b", "\x9c", "\x9d", "\x90",
                          "\r", "\b", "\x00", "\x7f", "\x85", "\u2028", "\u2029", "\n", "\t",
                          "0", "1", ";", "?", "m", "J", "K", "H", "A", "h", "l", "r", "8",
                          "52", "c;", "é", "中", *sorted(BIDI)])
HOSTILE = st.lists(st.one_of(PIECES, st.text(max_size=3)), max_size=40).map("".join)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def acts_on_a_terminal(ch: str) -> bool:
    code = ord(ch)
    return ((code < 0x20 and ch not in "\n\t") or 0x7f <= code <= 0x9f or ch in BIDI
            or ch in "\u2028\u2029")


@FAST
@given(HOSTILE)
@example("\x1b[8mhidden")
@example("\x1b]52;c;cm0K\x07\x1b]0;title\x1b\\")
@example("\x1b[1;2r\x1b[?1049h\x1b[?25l\x1b[4h\x1bc")
@example("\x9b2J\x9d0;t\x9c\x1b]0;unterminated")
def test_terminal_leaves_no_control(text: str) -> None:
    out = terminal(text)
    assert not any(acts_on_a_terminal(ch) for ch in out), repr(out)
    assert terminal(out) == out  # idempotent: escaping twice changes nothing
    line = terminal_line(text)
    assert "\n" not in line and "\t" not in line
    assert not any(acts_on_a_terminal(ch) for ch in line)


@FAST
@given(HOSTILE)
@example("\x1b[8m\x1b[30;47m\x1b[7m")
@example("\x1b]0;pwned\x07\x1b]2;x\x1b\\")
@example("\x1b[1;3r\x1b[?6h\x1b[?7l\x1b[20h")
def test_a_terminal_fed_the_text_is_left_as_it_was(text: str) -> None:
    screen = pyte.Screen(80, 24)
    stream = pyte.ByteStream(screen)
    default = pyte.Screen(80, 24)
    stream.feed(("A" + terminal(text) + "\r\nEND").encode("utf-8"))
    assert screen.title == "" and screen.icon_name == ""
    assert screen.mode == default.mode
    assert screen.margins is None
    assert screen.cursor.attrs == default.cursor.attrs
    assert screen.cursor.hidden is False
    y = screen.cursor.y
    assert screen.display[y].startswith("END") and screen.cursor.x == 3
    assert screen.buffer[0][0].data == "A" or y == 23  # "A" stays, unless scrolled away
    for x, ch in enumerate("END"):
        assert screen.buffer[y][x].data == ch
        assert screen.buffer[y][x].fg == "default" and screen.buffer[y][x].bg == "default"


@FAST
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), HOSTILE),
                    lambda inner: st.one_of(st.lists(inner, max_size=3),
                                            st.dictionaries(HOSTILE, inner, max_size=3)),
                    max_leaves=8))
def test_terminal_json_is_the_same_value_with_no_raw_control(data: object) -> None:
    text = terminal_json(data)
    assert json.loads(text) == data
    assert not any(acts_on_a_terminal(ch) for ch in text)


def test_unterminated_string_loses_only_its_introducer() -> None:
    assert terminal("a\x1b]0;rest of the reply") == "a0;rest of the reply"
    assert terminal("a\x1b]0;title\x07b") == "ab"
    assert terminal("x\x9d0;tail") == "x0;tail"


def test_letters_and_marks_stay() -> None:
    text = "Caffè, 東京, שלום, مرحبا, e\u0301, 👍🏽\tend\nnext"
    assert terminal(text) == text
    assert terminal_line(text) == text.replace("\t", "⇥").replace("\n", "⏎")
    assert all(unicodedata.category(ch) != "Cc" for ch in terminal_line(text))

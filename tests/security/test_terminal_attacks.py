"""The terminal shows what the model wants (issue 25, finding 1): outside text (the model's
streamed words, tool names, arguments, file names, audit reasons) must not act on the terminal
that shows it. Tested as a person sees it: the CLI's bytes are rendered by a terminal emulator
(pyte), and `metnos chat` is driven in a real pseudo-terminal (pexpect).

What may reach the terminal besides printable text: newline, tab, and the CLI's own few
sequences (the status line's `CR ESC[K`, the SGR reset `ESC[0m` before a card and its
question). Nothing the data holds.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import httpx
import pexpect
import pyte
import pytest
from typer.testing import CliRunner

from metnos.faces.cli.main import app
from metnos.mechanisms.audit import audit_log_path, open_audit_log, read_tail
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.support.home import Home

pytestmark = pytest.mark.attack
runner = CliRunner()
COLS, ROWS = 120, 40

FAKE_CARD = ("All done, nothing to worry about.\n"
             "Your approval is needed: reading a file\n"
             "  Action: fs_read\n"
             "    path = \"notes.txt\"\n"
             "Approve? [y/N] ")

# what a model may stream before it calls fs_delete: each tries to hide, move, overwrite or
# fake the real card and its question, or to act on the terminal itself
PAYLOADS = {
    "hidden_text": FAKE_CARD + "\x1b[8m",
    "black_on_black": FAKE_CARD + "\x1b[30;40m",
    "clear_screen": "\x1b[2J\x1b[3J\x1b[H" + FAKE_CARD,
    "erase_line_cr": "secret plan\x1b[2K\r" + FAKE_CARD,
    "cursor_moves": FAKE_CARD + "\x1b[s\x1b[20A\x1b[200D\x1b7",
    "scroll_region": FAKE_CARD + "\x1b[1;2r\x1b[?6h",
    "alternate_screen": "\x1b[?1049h" + FAKE_CARD,
    "osc52_clipboard_and_title": "\x1b]52;c;cm0gLXJmIH4K\x07\x1b]0;pwned\x07\x1b]2;x\x1b\\"
                                 + FAKE_CARD,
    "c1_csi_8bit": FAKE_CARD + "\x9b8m\x9d0;pwned\x9c",
    "bidi_override": "\u202e" + FAKE_CARD + "\u2066",
    "carriage_returns": "rm -rf everything\r" + FAKE_CARD + "\r\r",
    "split_sequence": FAKE_CARD + "\x1b [8m \x1b ]0;t\x07 ",  # ESC ends one streamed chunk
    "insert_mode": FAKE_CARD + "\x1b[4h\x1b[20@",
}

# the CLI's own sequences: the status line (stderr) and the reset before a card/question
OWN = re.compile(rb"\r\x1b\[K|\x1b\[0m|\x1b\[1m")
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def metnos_cmd() -> str:
    script = Path(sys.executable).with_name("metnos")
    return str(script)


def render(raw: bytes) -> pyte.Screen:
    screen = pyte.Screen(COLS, ROWS)
    pyte.ByteStream(screen).feed(raw)
    return screen


def assert_no_foreign_control(raw: bytes) -> None:
    """Only the CLI's own sequences: no other ESC, no C1, no BEL, no bare CR, no bidi."""
    rest = OWN.sub(b"", raw).replace(b"\r\n", b"\n")
    text = rest.decode("utf-8", "replace")
    bad = sorted({f"U+{ord(c):04X}" for c in text
                  if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
                  or BIDI.match(c)})
    assert not bad, f"control characters reached the terminal: {bad}\n{raw!r}"


def assert_terminal_untouched(screen: pyte.Screen) -> None:
    """No title, no scroll region, no mode other than the default ones."""
    default = pyte.Screen(COLS, ROWS)
    assert screen.title == "" and screen.icon_name == ""
    assert screen.margins is None
    assert screen.mode == default.mode


def assert_visible(screen: pyte.Screen, text: str) -> int:
    """`text` shows on a row, every one of its characters in default colours; its row (the
    lowest, when a fake shows it too)."""
    for y, line in reversed(list(enumerate(screen.display))):
        x = line.find(text)
        if x < 0:
            continue
        for i in range(x, x + len(text)):
            char = screen.buffer[y][i]
            assert char.fg == "default" and char.bg == "default" and not char.reverse, \
                (text, char)
        return y
    raise AssertionError(f"{text!r} not on the screen:\n" + "\n".join(screen.display))


@pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_streamed_text_cannot_hide_or_fake_the_real_card(
        served: Home, scripted_llm: ScriptedLLM, payload: str) -> None:
    victim = served.workspace / "victim.txt"
    victim.write_text("precious\n")
    scripted_llm.enqueue_tool_calls([ToolCall("fs_delete", {"path": "victim.txt"})],
                                    text=payload)
    scripted_llm.enqueue_text("Kept it.")
    child = pexpect.spawn(metnos_cmd(), ["chat", "--ask", "tidy up please"],
                          env=dict(os.environ), dimensions=(ROWS, COLS), timeout=90)
    raw = b""
    try:
        child.expect_exact("UTC.")  # the real card's last line (its expiry)
        raw += child.before + child.after
        child.expect_exact("[y/N]")
        raw += child.before + child.after
        child.expect(r"\s*")  # the prompt's trailing blank
        raw += child.before + child.after
        screen = render(raw)
        # the real card says the action in plain words (issue 27), not the tool's name
        action_row = assert_visible(screen, "Action: Move victim.txt to the trash")
        assert assert_visible(screen, 'path = "victim.txt"') > action_row
        assert assert_visible(screen, "File victim.txt: exists") > action_row
        prompt_row = assert_visible(screen, "Approve? [y/N]")
        assert prompt_row > action_row
        assert screen.display[prompt_row].strip() == "Approve? [y/N]"  # alone on its row
        assert screen.cursor.y == prompt_row  # the answer goes right after the real question
        child.sendline("n")
        child.expect(pexpect.EOF)
        raw += child.before
    finally:
        child.close(force=True)
    assert_no_foreign_control(raw)
    assert_terminal_untouched(render(raw))
    assert victim.read_text() == "precious\n"


def test_a_sequence_split_across_stream_chunks_stays_inert(
        served: Home, scripted_llm: ScriptedLLM) -> None:
    """The stream printer escapes each piece as it comes: an ESC at the end of one piece must
    not combine with `[8m` at the start of the next (ScriptedLLM streams word by word)."""
    scripted_llm.enqueue_text("look \x1b\t[8mhidden \x9b\t8m and \x1b\n]0;title\x07 end")
    child = pexpect.spawn(metnos_cmd(), ["chat", "--no-ask", "hi"], env=dict(os.environ),
                          dimensions=(ROWS, COLS), timeout=90)
    try:
        child.expect(pexpect.EOF)
        raw = child.before
    finally:
        child.close(force=True)
    assert_no_foreign_control(raw)
    screen = render(raw)
    assert_terminal_untouched(screen)
    assert_visible(screen, "hidden")


def audit_with(home: Home, **fields: str) -> None:
    with open_audit_log(home.settings) as audit:
        audit.append(action="fs_read", decision="allow", sender="owner", outcome="ok")
        audit.append(**fields)
        audit.append(action="fs_list", decision="allow", sender="owner", outcome="ok")


FORGED_ROW = "\x1b[2K\r  2  2026-01-01 00:00:00  allowed  fs_read  ok  done  owner"
AUDIT_HOSTILE = {
    "tool_name": {"action": "fs_delete" + FORGED_ROW, "reason": "ERR_POLICY_DENIED"},
    "reason_cursor_up": {"action": "fs_delete",
                         "reason": "no\x1b[1A\x1b[2K\x1b[G9  2026-01-01 00:00:00  allowed"},
    "outcome_cr": {"action": "fs_delete", "outcome": "x\r\x1b[1A\x1b[2K allowed"},
    "sender_osc": {"action": "fs_delete", "sender": "me\x1b]0;pwned\x07\u202e"},
}


@pytest.mark.parametrize("fields", list(AUDIT_HOSTILE.values()), ids=list(AUDIT_HOSTILE))
def test_audit_tail_shows_the_true_decision_on_one_row(
        served: Home, fields: dict[str, str]) -> None:
    audit_with(served, **{"decision": "deny", **fields})
    result = runner.invoke(app, ["audit", "tail", "-n", "3"], terminal_width=COLS,
                           env={"COLUMNS": str(COLS)})
    assert result.exit_code == 0, result.output
    raw = result.stdout_bytes.replace(b"\n", b"\r\n")
    assert_no_foreign_control(raw)
    screen = render(raw)
    assert_terminal_untouched(screen)
    rows = [line.rstrip() for line in screen.display if line.strip()]
    # a record's row starts at the left edge with its number; a long cell wraps inside its
    # column, so whatever a value holds it cannot start a row or fill the Decision column
    records = [row for row in rows if re.match(r"\d+\s+\d{4}-\d\d-\d\d \S+\s+\S+", row)]
    assert len(records) == 3, rows
    decisions = [re.split(r"\s+", row)[3] for row in records]
    assert decisions == ["allowed", "denied", "allowed"], rows
    assert "fs_delete" in records[1], rows
    assert all(row.startswith(" ") for row in rows[2:] if row not in records), rows


HOSTILE_CONTENT = "hi\x1b[2K\r  ab12cd  approved  fs_read(path=\"ok\")\x1b]0;t\x07\u202e"
# a path with control characters is refused before any card; bidi controls are not
HOSTILE_NAME = "re\u202etxt.exe\u2066port.txt"


def test_approvals_list_and_approve_print_hostile_arguments_inert(
        served: Home, scripted_llm: ScriptedLLM) -> None:
    scripted_llm.enqueue_tool_call("fs_write", {"path": HOSTILE_NAME, "content": HOSTILE_CONTENT})
    scripted_llm.enqueue_text("Done\x1b[2J\x1b[H \x1b]52;c;cm0K\x07 fine\r\x1b[8m")
    base = f"http://127.0.0.1:{served.settings.gateway.port}"
    body = httpx.post(f"{base}/api/turns", json={"text": "write it", "lang": "en"},
                      headers=served.auth(), timeout=60).json()
    assert body["status"] == "awaiting_approval", body
    approval_id = body["approvals"][0]["approval_id"]

    listed = runner.invoke(app, ["approvals", "list"], env={"COLUMNS": str(COLS)})
    assert listed.exit_code == 0, listed.output
    raw = listed.stdout_bytes.replace(b"\n", b"\r\n")
    assert_no_foreign_control(raw)
    screen = render(raw)
    assert_terminal_untouched(screen)
    rows = [line for line in screen.display if line.strip()]
    starts = [row for row in rows[2:] if not row.startswith(" ")]  # a wrapped cell is indented
    assert len(starts) == 1 and starts[0].startswith(approval_id), rows  # no forged row
    assert re.split(r"\s+", starts[0])[1] == "waiting", rows

    decided = runner.invoke(app, ["approvals", "approve", approval_id])
    assert decided.exit_code == 0, decided.output
    raw = decided.stdout_bytes.replace(b"\n", b"\r\n")
    assert_no_foreign_control(raw)
    screen = render(raw)
    assert_terminal_untouched(screen)
    assert_visible(screen, "fine")
    assert_visible(screen, approval_id)


def test_json_output_carries_no_raw_control_either(
        served: Home, scripted_llm: ScriptedLLM) -> None:
    """`--json` is for scripts but often lands on a terminal: the JSON stays valid and equal,
    with every control, C1 and bidi character written as a `\\u` escape."""
    audit_with(served, action="fs_delete\x9b8m\u202e\u2028", decision="deny")
    result = runner.invoke(app, ["audit", "tail", "-n", "3", "--json"])
    assert result.exit_code == 0, result.output
    assert_no_foreign_control(result.stdout_bytes)
    shown = [json.loads(line) for line in result.stdout.splitlines()]
    assert shown == read_tail(audit_log_path(served.settings), 3)  # the same records

"""Whose yes a step needs (issue 25, finding 8): decided by the action, never by who asked.
Every built-in executor has its expected answer; an unknown one waits for the owner."""

from __future__ import annotations

from typing import Any

import pytest

from metnos.features.pairing import OWNER_USER_ID
from metnos.mechanisms.executors.manifest import MANIFEST_FILE, Manifest, parse_manifest
from metnos.mechanisms.policy.approver import (
    ASK_OWNER,
    MEMBER_MAY,
    approver_for,
    approver_id,
    owner_asks,
)
from metnos.mechanisms.policy.decide import Decision
from tests.executors.conftest import REPO_EXECUTORS

MEMBER = "telegram:8202"
MANIFESTS = {p.parent.name: parse_manifest(p)
             for p in sorted(REPO_EXECUTORS.glob(f"*/{MANIFEST_FILE}"))}
# (executor, the member's arguments) → who approves; every built-in appears at least once
EXPECTED: list[tuple[str, dict[str, Any], str]] = [
    ("archive", {"path": "a.pdf"}, "owner"),
    ("fs_delete", {"path": "a.txt"}, "owner"),
    ("fs_find", {"pattern": "*.md"}, "self"),
    ("fs_move", {"src": "a.txt", "dst": "b.txt"}, "owner"),
    ("fs_read", {"path": "a.txt"}, "self"),
    ("fs_write", {"path": "RULES.md", "content": "x"}, "owner"),
    ("fs_write", {"path": "lists/mine.md", "content": "x"}, "owner"),
    ("i18n_lint", {"text": "ciao"}, "self"),
    ("imap_fetch_headers", {"folder": "INBOX"}, "owner"),
    ("imap_status", {"folders": ["INBOX"]}, "owner"),
    ("lists", {"action": "add", "list": "shopping", "items": ["milk"]}, "self"),
    ("lists", {"action": "show", "list": "shopping"}, "self"),
    ("lists", {"action": "remove", "list": "shopping", "items": ["milk"]}, "owner"),
    ("lists", {"action": "clear", "list": "shopping"}, "owner"),
    ("move_messages", {"folder": "INBOX", "to_folder": "Trash", "uids": [1]}, "owner"),
    ("notify", {"text": "hi"}, "owner"),
    ("ocr", {"path": "inbox/receipt.jpg"}, "self"),
    ("pdf_ext", {"path": "a.pdf"}, "self"),
    ("photo_rename", {"folder": "photos", "prefix": "x"}, "owner"),
    ("reminder_set", {"text": "call mum", "at": "18:00"}, "self"),
    ("schedule_set", {"when": "every day", "text": "delete victim.md"}, "owner"),
    ("shell_run", {"command": "touch x"}, "owner"),
    ("summarize", {"messages": "[]"}, "self"),
    ("web_fetch", {"url": "https://example.org"}, "owner"),
]


def test_every_builtin_has_an_expected_answer() -> None:
    assert {name for name, _, _ in EXPECTED} == set(MANIFESTS)
    assert set(MEMBER_MAY) <= set(MANIFESTS)  # the table names no executor that is not there


@pytest.mark.parametrize(("name", "args", "expected"), EXPECTED,
                         ids=[f"{n}-{a.get('action', '')}" for n, a, _ in EXPECTED])
def test_who_approves_a_members_step(name: str, args: dict[str, Any], expected: str) -> None:
    manifest = MANIFESTS[name]
    assert approver_for(manifest, args, MEMBER) == expected
    assert approver_id(manifest, args, MEMBER) == (MEMBER if expected == "self"
                                                   else OWNER_USER_ID)
    assert approver_for(manifest, args, OWNER_USER_ID) == "self"  # the owner's own


def _renamed(name: str, **changes: Any) -> Manifest:
    return MANIFESTS["fs_read"].model_copy(update={"name": name, **changes})


def test_an_unknown_executor_waits_for_the_owner() -> None:
    """A synt's executor (or any name not in the table): the owner, even if it claims to
    change nothing (fail closed)."""
    assert approver_for(_renamed("weather_peek"), {}, MEMBER) == "owner"


def test_a_self_rule_holds_only_for_what_the_manifest_says() -> None:
    """A table entry whose manifest acts (writes, reaches the network) is the owner's."""
    acting = _renamed("fs_read", side_effects=True)
    assert approver_for(acting, {"path": "a"}, MEMBER) == "owner"
    networked = MANIFESTS["lists"].model_copy(
        update={"sandbox": MANIFESTS["lists"].sandbox.model_copy(update={"network": True})})
    assert approver_for(networked, {"action": "add"}, MEMBER) == "owner"


def test_a_members_step_for_the_owner_asks_at_every_level() -> None:
    allow = Decision("allow", "MSG_OK", {"autonomy": "Full"})
    asked = owner_asks(allow, MANIFESTS["fs_move"], {"src": "a", "dst": "b"}, MEMBER)
    assert (asked.verdict, asked.key, asked.vars["executor"]) == ("ask", ASK_OWNER, "fs_move")
    assert owner_asks(allow, MANIFESTS["fs_move"], {}, OWNER_USER_ID) is allow
    assert owner_asks(allow, MANIFESTS["lists"], {"action": "add"}, MEMBER) is allow
    deny = Decision("deny", "ERR_POLICY_HIGH_RISK")
    assert owner_asks(deny, MANIFESTS["shell_run"], {}, MEMBER) is deny
    ask = Decision("ask", "ASK_POLICY_IRREVERSIBLE")
    assert owner_asks(ask, MANIFESTS["shell_run"], {}, MEMBER) is ask

"""One household, one list (issue 27): the per-language files an older home has
(`lists/spesa.md` beside `lists/shopping.md`, `promemoria.md` beside `reminders.md`...) are
merged into the list's one file, losing nothing: identical items once, the order kept, a signed
before-record so `metnos undo` puts the old files back, and an audit line."""

from __future__ import annotations

from pathlib import Path

from metnos.features.lists import list_id, list_path
from metnos.features.lists_merge import merge_lists
from metnos.ground import keys
from metnos.mechanisms.audit import open_audit_log
from metnos.mechanisms.undo import undo
from tests.support.home import MakeHome


def _write(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")


def test_a_list_has_one_file_whatever_language_names_it() -> None:
    names = ["spesa", "lista della spesa", "Shopping", "groceries", "the shopping list",
             "la spesa", "grocery list"]
    assert {list_path(n) for n in names} == {"lists/shopping.md"}
    assert {list_id(n) for n in ["promemoria", "reminders", "reminder"]} == {"reminders"}
    assert {list_id(n) for n in ["note", "notes", "appunti"]} == {"notes"}
    assert {list_id(n) for n in ["cose da fare", "to-do", "todo", "things to do"]} == {"to-do"}
    assert list_path("gifts") == "lists/gifts.md"  # a list the layers don't know: its own
    assert list_path("regali") == "lists/regali.md"
    assert list_path("gift list") == list_path("gift") == "lists/gift.md"


def test_an_older_home_s_lists_are_merged_losing_nothing(make_home: MakeHome) -> None:
    home = make_home(lang="it")
    settings = home.settings
    lists = settings.workspace / "lists"
    spesa = "# Spesa\n\n- latte\n- uova\n* pane integrale\n"
    shopping = "# Shopping\n\n- Uova\n- bread\n"
    _write(lists, "spesa.md", spesa)
    _write(lists, "shopping.md", shopping)
    _write(lists, "promemoria.md", "# Promemoria\n\n- chiamare Anna\n")
    _write(lists, "regali.md", "# Regali\n\n- bici\n")
    with open_audit_log(settings) as audit:
        merged = merge_lists(settings, audit)
        tail = audit.tail(5)
    assert sorted((m.into, m.merged) for m in merged) == [
        ("lists/reminders.md", ("lists/promemoria.md",)),
        ("lists/shopping.md", ("lists/spesa.md",))]
    assert (lists / "shopping.md").read_text() == (
        "# Shopping\n\n- Uova\n- bread\n- latte\n- pane integrale\n")
    assert (lists / "reminders.md").read_text() == "# Promemoria\n\n- chiamare Anna\n"
    assert sorted(p.name for p in lists.iterdir()) == ["regali.md", "reminders.md", "shopping.md"]
    merges = [r for r in tail if r.get("action") == "lists.merge"]
    assert sorted(r["action_id"] for r in merges) == sorted(m.action_id for m in merged)
    assert all(r["outcome"] == "done" for r in merges)
    # idempotent: a second start finds nothing to merge
    with open_audit_log(settings) as audit:
        assert merge_lists(settings, audit) == []
    # the merge of the shopping lists can be undone: both files come back as they were
    shop = next(m for m in merged if m.list_id == "shopping")
    undo(shop.action_id, state_dir=settings.state_dir, workspace=settings.workspace,
         public_key=keys.load_public_key(settings.keys_dir, "audit"),
         private_key=keys.load_private_key(settings.keys_dir, "audit"))
    assert (lists / "spesa.md").read_text() == spesa
    assert (lists / "shopping.md").read_text() == shopping

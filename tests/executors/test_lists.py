"""The `lists` executor: named lists as markdown files, run in the real bubblewrap sandbox with
the host's before-record and undo; its manifest, host check and replies; fs_write's append."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from metnos.features.lists import list_path, list_slug, list_title
from metnos.features.lists_merge import check_list_name
from metnos.ground import i18n
from metnos.ground.errors import PolicyDenied
from metnos.ground.settings import Settings, get_settings
from metnos.mechanisms.executors.manifest import MANIFEST_FILE, parse_manifest
from metnos.mechanisms.policy import host_checks
from metnos.mechanisms.sandbox import SandboxResult
from metnos.turns.reply import StepOutcome, render_outcome
from tests.executors.conftest import REPO_EXECUTORS, RunExecutor
from tests.executors.test_shell_web import error_of, run_in_sandbox
from tests.undo.support import Actor, actor, tree_digest

__all__ = ["actor"]  # the fixture, imported for this module

MANIFEST = parse_manifest(REPO_EXECUTORS / "lists" / MANIFEST_FILE)


def _act(actor: Actor, **args: Any) -> tuple[str, dict[str, Any]]:
    args.setdefault("path", list_path(str(args["list"])))
    action_id, result = actor.act("lists", args)
    assert result.result is not None
    return action_id, result.result


def test_add_show_remove_clear(actor: Actor) -> None:
    _, res = _act(actor, action="add", list="spesa", items=["latte", "uova", "pane"])
    assert (res["action"], res["reply"], res["added"], res["count"]) == (
        "add", "add", ["latte", "uova", "pane"], 3)
    path = actor.ws / "lists" / "shopping.md"  # "spesa" is the shopping list
    assert path.read_text() == "# Spesa\n\n- latte\n- uova\n- pane\n"
    _, res = _act(actor, action="add", list="spesa", items=["Latte", "caffè", "caffè"])
    assert (res["added"], res["already"], res["reply"]) == (["caffè"], ["Latte"], "add_partly")
    _, res = _act(actor, action="add", list="spesa", items=["PANE"])
    assert (res["added"], res["reply"]) == ([], "add_none")
    _, res = _act(actor, action="remove", list="spesa", items=["LATTE", "Caffe", "burro"])
    assert (res["removed"], res["missing"], res["reply"]) == (
        ["latte", "caffè"], ["burro"], "remove_partly")
    assert res["items"] == ["uova", "pane"]
    _, res = _act(actor, action="show", list="spesa")
    assert (res["items"], res["count"], res["reply"]) == (["uova", "pane"], 2, "show")
    _, res = _act(actor, action="clear", list="spesa")
    assert (res["removed"], res["items"], res["count"], res["reply"]) == (
        ["uova", "pane"], [], 2, "clear")
    assert path.read_text() == "# Spesa\n\n"
    _, res = _act(actor, action="show", list="spesa")
    assert res["reply"] == "show_empty"
    _, res = _act(actor, list="note", text="il codice è 12, scala B\n e poi")  # one item
    assert (res["action"], res["added"]) == ("add", ["il codice è 12, scala B e poi"])


def test_a_list_edited_by_hand_is_read_back_and_only_changed_lines_move(actor: Actor) -> None:
    path = actor.ws / "lists" / "to-do.md"
    path.parent.mkdir()
    path.write_text("# Cose da fare\n\n* chiamare il medico\n- [ ] pagare la luce\n\n"
                    "+ portare fuori il cane\n1. innaffiare\nlavare l'auto\n")
    _, res = _act(actor, action="show", list="to-do")
    assert res["items"] == ["chiamare il medico", "pagare la luce", "portare fuori il cane",
                            "innaffiare", "lavare l'auto"]
    _, res = _act(actor, action="remove", list="to-do", items=["Pagare la luce"])
    assert res["removed"] == ["pagare la luce"]
    _, res = _act(actor, action="add", list="to-do", items="comprare il pane, ritirare\npacco")
    assert res["added"] == ["comprare il pane", "ritirare", "pacco"]
    assert path.read_text() == (
        "# Cose da fare\n\n* chiamare il medico\n\n+ portare fuori il cane\n1. innaffiare\n"
        "lavare l'auto\n- comprare il pane\n- ritirare\n- pacco\n")


def test_undo_restores_the_list_and_a_new_list_goes_to_the_trash(actor: Actor) -> None:
    created, _ = _act(actor, action="add", list="Regali", items=["libro"])
    assert (actor.ws / "lists" / "regali.md").read_text() == "# Regali\n\n- libro\n"
    before = tree_digest(actor.ws)
    removed, _ = _act(actor, action="remove", list="regali", items=["libro"])
    assert (actor.ws / "lists" / "regali.md").read_text() == "# Regali\n\n"
    assert actor.undo(removed).outcome == "done"
    assert tree_digest(actor.ws) == before
    report = actor.undo(created)
    assert report.outcome == "done"
    assert not (actor.ws / "lists").exists()  # it did not exist: it went to the trash
    assert {(i.path, i.status) for i in report.items} == {
        ("lists/regali.md", "trashed"), ("lists", "trashed")}


@pytest.mark.parametrize(("args", "key"), [
    ({"action": "add", "list": "spesa", "path": "spesa.md", "items": ["x"]},
     "ERR_FILE_PATH_REFUSED"),
    ({"action": "add", "list": "spesa", "path": "lists/../a.md", "items": ["x"]},
     "ERR_FILE_PATH_REFUSED"),
    ({"action": "add", "list": "spesa", "path": "lists/spesa.md"}, "ERR_EXECUTOR_ARG_INVALID"),
    ({"action": "drop", "list": "spesa", "path": "lists/spesa.md"}, "ERR_EXECUTOR_ARG_INVALID"),
    ({"action": "add", "list": "spesa", "path": "lists/spesa.md", "items": [3]},
     "ERR_EXECUTOR_ARG_INVALID"),
    ({"action": "show", "list": "spesa", "path": "lists/spesa.md", "mode": "x"},
     "ERR_EXECUTOR_ARG_INVALID"),
])
def test_bad_arguments_are_refused(tmp_path: Path, args: dict[str, Any], key: str) -> None:
    result: SandboxResult = run_in_sandbox("lists", tmp_path, args)
    assert error_of(result) == key
    assert not (tmp_path / "lists").exists()


def apply_host_checks(settings: Settings, checks: dict[str, str],
                      args: dict[str, Any]) -> dict[str, Any]:
    """The checks as a turn applies them: the lists' own is registered by `metnos.faces.wiring`."""
    return host_checks.apply_host_checks(settings, checks, args, {"list_name": check_list_name})


def test_the_host_derives_the_file_from_the_name(metnos_home: Path) -> None:
    settings = get_settings()
    checks = MANIFEST.host_checks()
    args = apply_host_checks(settings, checks, {"action": "add", "list": "Lista della Spesa"})
    assert (args["path"], args["list"]) == ("lists/shopping.md", "shopping")  # one list
    assert args["title"] == list_title("shopping", settings.lang)  # in the home's language
    english = apply_host_checks(settings, checks, {"action": "add", "list": "groceries"})
    assert (english["path"], english["list"]) == ("lists/shopping.md", "shopping")
    own = apply_host_checks(settings, checks, {"action": "add", "list": "lista dei regali"})
    assert (own["path"], own["list"], own["title"]) == (
        "lists/regali.md", "lista dei regali", "Lista dei regali")  # a list of its own
    forged = apply_host_checks(settings, checks, {"list": "spesa", "path": "../../etc/passwd",
                                                  "title": "x"})
    assert forged["path"] == "lists/shopping.md"  # the planner never chooses the file
    assert forged["title"] == list_title("spesa", settings.lang) != "x"  # nor its heading
    with pytest.raises(PolicyDenied):
        apply_host_checks(settings, checks, {"list": "?!"})
    assert (list_slug("Città  Nuova!"), list_slug("to-do")) == ("citta-nuova", "to-do")


def test_a_link_never_turns_a_list_into_another_file(metnos_home: Path) -> None:
    settings = get_settings()
    checks = MANIFEST.host_checks()
    lists = settings.workspace / "lists"
    lists.mkdir(parents=True)
    (settings.workspace / "notes.md").write_text("mine\n")
    (lists / "shopping.md").symlink_to("../notes.md")
    with pytest.raises(PolicyDenied) as inside:
        apply_host_checks(settings, checks, {"list": "spesa"})
    assert inside.value.key == "ERR_FILE_PATH_REFUSED"
    (lists / "shopping.md").unlink()
    lists.rmdir()
    lists.symlink_to(metnos_home)  # out of the workspace, into METNOS_HOME (the keys)
    with pytest.raises(PolicyDenied) as outside:
        apply_host_checks(settings, checks, {"list": "spesa"})
    assert outside.value.key in ("ERR_PATH_FORBIDDEN", "ERR_PATH_OUTSIDE_WORKSPACE")


def test_manifest_hides_the_path_and_show_changes_nothing() -> None:
    for lang in ("it", "en"):
        spec = MANIFEST.tool_spec(lang)
        assert set(spec.parameters["properties"]) == {"action", "list", "items", "text"}
        assert spec.parameters["required"] == ["list"]
    assert "path" not in MANIFEST.input_schema()
    assert MANIFEST.path_inputs() == {"path": "write"}  # what the before-record covers
    assert not MANIFEST.changes({"action": "show", "list": "spesa"})
    assert MANIFEST.changes({"action": "clear", "list": "spesa"})
    assert MANIFEST.changes({"list": "spesa"})  # the default action adds
    assert (MANIFEST.risk, MANIFEST.reversible) == ("low", True)


def _reply(result: dict[str, Any], lang: str) -> str:
    return render_outcome(StepOutcome("lists", "done", result=result, action_id="a1"), lang)


def _result(action: str, reply: str, **lists: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"action": action, "list": "shopping", "path": "lists/shopping.md",
                           "items": [], "added": [], "already": [], "removed": [],
                           "missing": [], "count": 0, "reply": reply}
    out.update(lists)
    out["count"] = len(out["items"])
    return out


def test_replies_per_outcome_in_both_languages() -> None:
    added = _result("add", "add", items=["milk", "eggs", "bread"], added=["milk", "eggs", "bread"])
    assert _reply(added, "en") == "Added milk, eggs, and bread to the shopping list (3 items)."
    assert _reply({**added, "list": "shopping"}, "it") == (
        "Ho aggiunto milk, eggs e bread alla lista della spesa (3 voci).")
    assert _reply({**added, "list": "regali"}, "it") == (  # a list of its own: as named
        "Ho aggiunto milk, eggs e bread alla lista regali (3 voci).")
    partly = _result("add", "add_partly", items=["milk", "eggs"], added=["eggs"],
                     already=["milk"])
    assert _reply(partly, "en").endswith("(2 items). Already on it: milk.")
    shown = _result("show", "show", items=["milk"])
    assert _reply(shown, "en") == "The shopping list (1 item):\n- milk"
    missing = _result("remove", "remove_none", items=["milk"], missing=["tea"])
    assert _reply(missing, "it") == (
        "Nella lista della spesa non c'era: tea. Non ho cambiato nulla.")
    for key in ("add", "add_partly", "add_none", "remove", "remove_partly", "remove_none",
                "show", "show_empty", "clear", "clear_empty"):
        for lang in ("it", "en"):
            assert i18n.lookup(f"EX_REPLY_lists_{key}", lang) is not None, (key, lang)


@pytest.mark.parametrize(("before", "added", "after"), [
    ("milk, bread", "eggs", "milk, bread\neggs"),
    ("milk, bread\n", "eggs", "milk, bread\neggs"),
    ("", "eggs", "eggs"),
])
def test_fs_write_append_starts_on_a_new_line(run_executor: RunExecutor, workspace: Path,
                                              before: str, added: str, after: str) -> None:
    (workspace / "list.txt").write_text(before)
    reply = run_executor("fs_write", {"path": "list.txt", "content": added, "mode": "append"})
    assert reply["ok"], reply
    assert (workspace / "list.txt").read_text() == after
    assert reply["result"]["bytes_written"] == len(after) - len(before)

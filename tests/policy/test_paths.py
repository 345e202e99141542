"""Every spelling of a forbidden or outside path is refused; workspace paths come out relative."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from metnos.ground import i18n
from metnos.ground.errors import PolicyDenied
from metnos.mechanisms.policy import forbidden_roots, resolve_in_workspace

FORBIDDEN = "ERR_PATH_FORBIDDEN"
OUTSIDE = "ERR_PATH_OUTSIDE_WORKSPACE"


@dataclass
class Layout:
    home: Path
    metnos_home: Path
    workspace: Path
    outside: Path

    def resolve(self, raw: str) -> str:
        return resolve_in_workspace(
            raw, self.workspace, home_dir=self.home, metnos_home=self.metnos_home
        )

    def denied(self, raw: str) -> PolicyDenied:
        with pytest.raises(PolicyDenied) as err:
            self.resolve(raw)
        return err.value


@pytest.fixture
def lay(tmp_path: Path) -> Layout:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    metnos_home = tmp_path / "metnos"
    workspace = metnos_home / "workspace"
    (workspace / "notes").mkdir(parents=True)
    (workspace / "notes" / "a.md").write_text("# a")
    (workspace / ".audit").mkdir()
    (workspace / ".audit" / "audit.jsonl").write_text("")
    (metnos_home / "keys").mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    return Layout(home, metnos_home, workspace, outside)


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("~/.ssh/id_rsa", FORBIDDEN),
        ("~/.gnupg/pubring.kbx", FORBIDDEN),
        ("~/.aws/credentials", FORBIDDEN),
        ("~/.config/x", FORBIDDEN),
        ("../../etc/shadow", OUTSIDE),  # tmp_path/etc/shadow: outside, not /etc
        ("../" * 40 + "etc/shadow", FORBIDDEN),
        ("/proc/self/root/etc/passwd", FORBIDDEN),
        ("/proc/1/cwd", FORBIDDEN),
        ("//etc//passwd", FORBIDDEN),
        ("///etc/passwd", FORBIDDEN),
        ("/etc/./passwd", FORBIDDEN),
        ("/etc/../etc/shadow", FORBIDDEN),
        ("/root/.bashrc", FORBIDDEN),
        ("~root/.bashrc", FORBIDDEN),
        ("/dev/sda", FORBIDDEN),
        ("/sys/kernel", FORBIDDEN),
        ("/boot", FORBIDDEN),
        ("./a/../../b", OUTSIDE),
        ("..", OUTSIDE),
        ("~", OUTSIDE),
        ("/usr/bin/python3", OUTSIDE),
        (".audit/audit.jsonl", FORBIDDEN),
        (".audit", FORBIDDEN),
        ("notes/../.audit/audit.jsonl", FORBIDDEN),
        ("./.audit//audit.jsonl", FORBIDDEN),
        ("../keys/audit.key", FORBIDDEN),
        ("../secrets/owner.token", FORBIDDEN),
        ("../state/audit.checkpoint", FORBIDDEN),
        ("../pg/postgresql.conf", FORBIDDEN),
        ("../signatures/fs_read.minisig", FORBIDDEN),
    ],
)
def test_refused_spellings(lay: Layout, raw: str, key: str) -> None:
    err = lay.denied(raw)
    assert err.key == key, (raw, err.key)
    assert err.vars["reason"] in {"forbidden_root", "outside_workspace"}


def test_absolute_forms_of_forbidden_metnos_paths(lay: Layout) -> None:
    assert lay.denied(str(lay.metnos_home / "keys" / "audit.key")).key == FORBIDDEN
    assert lay.denied(str(lay.workspace / ".audit" / "audit.jsonl")).key == FORBIDDEN
    assert lay.denied(str(lay.home / ".ssh")).key == FORBIDDEN


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("notes/a.md", "notes/a.md"),
        ("./notes//a.md", "notes/a.md"),
        ("notes/./x/../a.md", "notes/a.md"),
        (".", "."),
        ("notes/", "notes"),
        ("new/dir/file.txt", "new/dir/file.txt"),  # a write target that does not exist yet
        ("$HOME/.ssh/id_rsa", "$HOME/.ssh/id_rsa"),  # no env expansion: a plain name
        ("~nosuchuser-metnos/a", "~nosuchuser-metnos/a"),  # unknown user: a plain name
        (".auditing/x", ".auditing/x"),  # a sibling, not inside .audit
        ("ñoño é.md", "ñoño é.md"),
    ],
)
def test_accepted_spellings(lay: Layout, raw: str, expected: str) -> None:
    assert lay.resolve(raw) == expected


def test_absolute_path_inside_workspace_becomes_relative(lay: Layout) -> None:
    assert lay.resolve(str(lay.workspace / "notes" / "a.md")) == "notes/a.md"
    assert lay.resolve(str(lay.workspace)) == "."
    assert lay.resolve("//" + str(lay.workspace).lstrip("/") + "//notes") == "notes"


def test_proc_self_cwd_is_refused_even_when_it_is_the_workspace(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(lay.workspace)
    assert lay.denied("/proc/self/cwd/notes/a.md").key == FORBIDDEN


def test_symlink_pointing_outside(lay: Layout) -> None:
    (lay.workspace / "out").symlink_to(lay.outside)
    (lay.workspace / "file_out").symlink_to(lay.outside / "secret.txt")
    (lay.workspace / "dangling").symlink_to(lay.outside / "not-yet")
    assert lay.denied("out/secret.txt").key == OUTSIDE
    assert lay.denied("file_out").key == OUTSIDE
    assert lay.denied("dangling").key == OUTSIDE
    assert lay.denied("out/../elsewhere/secret.txt").key == OUTSIDE


def test_symlink_to_forbidden_roots(lay: Layout) -> None:
    (lay.workspace / "k").symlink_to(lay.home / ".ssh")
    (lay.workspace / "etc").symlink_to("/etc")
    (lay.workspace / "aud").symlink_to(".audit")
    (lay.workspace / "notes" / "up").symlink_to("../..")
    assert lay.denied("k/id_rsa").key == FORBIDDEN
    assert lay.denied("etc/passwd").key == FORBIDDEN
    assert lay.denied("aud/audit.jsonl").key == FORBIDDEN
    assert lay.denied("notes/up/keys/audit.key").key == FORBIDDEN


def test_symlink_chain(lay: Layout) -> None:
    sub = lay.workspace / "sub"
    sub.mkdir()
    (lay.workspace / "l1").symlink_to("l2")
    (lay.workspace / "l2").symlink_to("sub/l3")
    (sub / "l3").symlink_to(lay.outside)
    assert lay.denied("l1/secret.txt").key == OUTSIDE
    (lay.workspace / "m1").symlink_to("m2")
    (lay.workspace / "m2").symlink_to("notes")
    assert lay.resolve("m1/a.md") == "notes/a.md"


def test_symlink_loop(lay: Layout) -> None:
    (lay.workspace / "la").symlink_to("lb")
    (lay.workspace / "lb").symlink_to("la")
    assert lay.denied("la/x").key == "ERR_PATH_SYMLINK_LOOP"


def test_hard_links_are_refused(lay: Layout) -> None:
    os.link(lay.workspace / "notes" / "a.md", lay.workspace / "b.md")
    os.link(lay.home / ".ssh" / "id_rsa", lay.workspace / "innocent.txt")
    for raw in ("b.md", "notes/a.md", "innocent.txt"):
        err = lay.denied(raw)
        assert (err.key, err.vars["reason"]) == ("ERR_PATH_HARDLINK", "hardlink")


@pytest.mark.parametrize(
    ("raw", "key", "reason"),
    [
        ("a\x00b", "ERR_PATH_CONTROL_CHARS", "nul_byte"),
        ("a\nb", "ERR_PATH_CONTROL_CHARS", "control_char"),
        ("notes/\x1b[31ma.md", "ERR_PATH_CONTROL_CHARS", "control_char"),
        ("a\x85b", "ERR_PATH_CONTROL_CHARS", "control_char"),
        ("bad\ud800", "ERR_PATH_CONTROL_CHARS", "encoding"),
        ("a" * 256, "ERR_PATH_TOO_LONG", "too_long"),
        ("a/" * 2100, "ERR_PATH_TOO_LONG", "too_long"),
        ("", "ERR_PATH_EMPTY", "empty"),
        ("   ", "ERR_PATH_EMPTY", "empty"),
    ],
)
def test_malformed_paths(lay: Layout, raw: str, key: str, reason: str) -> None:
    err = lay.denied(raw)
    assert (err.key, err.vars["reason"]) == (key, reason)
    assert "\x00" not in err.vars["path"] and "\n" not in err.vars["path"]


def test_workspace_under_a_forbidden_root_stays_reachable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    metnos_home = home / ".config" / "metnos"  # inside ~/.config, a forbidden root
    workspace = metnos_home / "workspace"
    (workspace / ".audit").mkdir(parents=True)
    (home / ".config" / "other").mkdir()

    lay = Layout(home, metnos_home, workspace, outside=tmp_path)
    assert lay.resolve("notes.md") == "notes.md"
    assert lay.resolve(str(workspace / "notes.md")) == "notes.md"
    for raw in (".audit/audit.jsonl", "~/.config/other/token", "../keys/x", "../../other/x"):
        assert lay.denied(raw).key == FORBIDDEN, raw


def test_metnos_home_under_root(tmp_path: Path) -> None:
    """A real install run as root: METNOS_HOME under /root (nothing is created there)."""
    metnos_home = Path("/root/.local/share/metnos-policy-test-does-not-exist")
    workspace = metnos_home / "workspace"

    lay = Layout(Path("/root"), metnos_home, workspace, outside=tmp_path)
    assert lay.resolve("notes/a.md") == "notes/a.md"
    assert lay.resolve(str(workspace / "x")) == "x"
    for raw in ("/root/.bashrc", "~/.ssh/id_rsa", "../keys/audit.key", ".audit/audit.jsonl"):
        assert lay.denied(raw).key == FORBIDDEN, raw


def test_forbidden_roots_list(tmp_path: Path) -> None:
    home, mh = tmp_path / "h", tmp_path / "m"
    roots = forbidden_roots(home, mh, mh / "workspace")
    expected = [home / ".ssh", home / ".gnupg", home / ".aws", home / ".config"]
    expected += [Path(p) for p in ("/etc", "/root", "/boot", "/proc", "/sys", "/dev")]
    expected += [mh / n for n in ("secrets", "keys", "state", "pg", "signatures")]
    expected += [mh / "workspace" / ".audit", mh / "workspace" / ".trash"]
    assert roots == expected
    assert forbidden_roots(Path("//home/u/"), mh, mh / "w")[0] == Path("/home/u/.ssh")


def test_denial_messages_name_the_path(lay: Layout) -> None:
    err = lay.denied("~/.ssh/id_rsa")
    assert i18n.message(err, "it").startswith(
        "Non posso accedere a ~/.ssh/id_rsa: è un percorso protetto"
    )
    assert "~/.ssh/id_rsa" in i18n.message(err, "en") and "protected" in i18n.message(err, "en")
    assert "fuori dal workspace" in i18n.message(lay.denied("/usr/bin"), "it")

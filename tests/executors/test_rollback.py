"""Issue 25, finding 13: an older signed copy of an owner's executor, put back, is refused.

The built-ins are pinned by BUILTIN.lock; the executors under METNOS_HOME/executors (the
synt's, signed by the owner) are pinned by the highest signature the owner made of each
(`metnos.mechanisms.executors.versions`, kept beside the signing key). Putting back an older folder
with its older, genuine signature — a lower version, or the same version signed earlier with other
code — is refused with a reason and an audit line; an owner's downgrade is an explicit,
audited act (`metnos executors sign NAME --downgrade`). Real keys, real CLI, real files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metnos.faces.cli.executors import app
from metnos.ground.settings import get_settings
from metnos.mechanisms.audit.log import audit_log_path, read_tail
from metnos.mechanisms.executors import versions
from metnos.mechanisms.executors.registry import load_registry
from metnos.mechanisms.executors.signing import SignedFacts
from tests.executors.conftest import REPO_EXECUTORS

runner = CliRunner()
NAME = "my_tool"


@pytest.fixture
def home(metnos_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("METNOS_LANG", "en")
    owner = metnos_home / "executors" / NAME
    shutil.copytree(REPO_EXECUTORS / "fs_read", owner, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = owner / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('name = "fs_read"', f'name = "{NAME}"'))
    return metnos_home


def _folder(home: Path) -> Path:
    return home / "executors" / NAME


def _sig(home: Path) -> Path:
    return home / "signatures" / f"{NAME}.minisig"


def _sign(*extra: str) -> None:
    result = runner.invoke(app, ["sign", NAME, *extra])
    assert result.exit_code == 0, result.output


def _snapshot(home: Path, where: Path) -> None:
    """A copy of the executor and its signature, as a backup would hold them."""
    shutil.copytree(_folder(home), where / "folder")
    shutil.copy2(_sig(home), where / "sig")


def _put_back(home: Path, where: Path) -> None:
    shutil.rmtree(_folder(home))
    shutil.copytree(where / "folder", _folder(home))
    shutil.copy2(where / "sig", _sig(home))


def _set_version(home: Path, version: str) -> None:
    manifest = _folder(home) / "manifest.toml"
    text = manifest.read_text()
    old = next(line for line in text.splitlines() if line.startswith("version = "))
    manifest.write_text(text.replace(old, f'version = "{version}"'))


def _change_code(home: Path, mark: str) -> None:
    main = _folder(home) / "main.py"
    main.write_text(main.read_text() + f"\n# {mark}\n")


def _refusal(home: Path) -> tuple[str, dict[str, object]] | None:
    registry = load_registry(get_settings())
    reason = registry.refusal(NAME)
    assert (reason is None) == (NAME in registry)
    return (reason.key, reason.vars) if reason else None


@pytest.mark.attack
def test_an_older_version_put_back_is_refused(home: Path, tmp_path: Path) -> None:
    _sign()
    _snapshot(home, tmp_path)  # 0.1.0, genuinely signed
    _set_version(home, "0.2.0")
    _change_code(home, "the fixed 0.2.0")
    _sign()
    assert _refusal(home) is None
    _put_back(home, tmp_path)  # the old copy with its old, valid signature
    assert _refusal(home) == ("ERR_EXECUTOR_ROLLED_BACK",
                              {"name": NAME, "version": "0.1.0", "signed_version": "0.2.0"})
    line = read_tail(audit_log_path(get_settings()), 1)[0]
    assert (line["action"], line["decision"], line["reason"]) == (
        "executors.admit", "deny", "ERR_EXECUTOR_ROLLED_BACK")
    verify = runner.invoke(app, ["verify", NAME])
    assert verify.exit_code == 1 and "0.1.0" in verify.stderr and "0.2.0" in verify.stderr


@pytest.mark.attack
def test_the_same_version_signed_earlier_is_refused(home: Path, tmp_path: Path) -> None:
    """A replay: the same version string, other code, an older genuine signature."""
    _change_code(home, "the buggy build")
    _sign()
    _snapshot(home, tmp_path)
    shutil.copy2(_folder(home) / "main.py", tmp_path / "buggy_main.py")
    _change_code(home, "the fixed build, same version")
    _sign()
    _put_back(home, tmp_path)
    refusal = _refusal(home)
    assert refusal is not None and refusal[0] == "ERR_EXECUTOR_ROLLED_BACK", refusal


def test_signing_an_older_version_asks_for_an_explicit_downgrade(
        home: Path, tmp_path: Path) -> None:
    _set_version(home, "0.2.0")
    _sign()
    _set_version(home, "0.1.5")
    refused = runner.invoke(app, ["sign", NAME])
    assert refused.exit_code == 1
    assert "0.1.5" in refused.stderr and "0.2.0" in refused.stderr
    assert "--downgrade" in refused.stderr
    assert _refusal(home) is not None  # still the 0.2.0 signature on a 0.1.5 folder
    line = read_tail(audit_log_path(get_settings()), 1)[0]
    assert (line["action"], line["decision"], line["reason"]) == (
        "executors.sign", "deny", "ERR_EXECUTOR_OLDER_THAN_SIGNED")

    done = runner.invoke(app, ["sign", NAME, "--downgrade", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["version"] == "0.1.5"
    assert _refusal(home) is None  # the owner's downgrade is the new high-water mark
    line = read_tail(audit_log_path(get_settings()), 1)[0]
    assert (line["action"], line["decision"], line["outcome"]) == (
        "executors.sign", "allow", "downgraded")


def test_control_newer_and_resigned_copies_are_admitted(home: Path) -> None:
    _sign()
    assert _refusal(home) is None
    _sign()  # signing the same content again: still admitted
    assert _refusal(home) is None
    _set_version(home, "0.1.1")
    _sign()
    assert _refusal(home) is None


def test_the_marks_live_beside_the_key_not_in_the_workspace(home: Path) -> None:
    _sign()
    marks = home / "keys" / "executors.versions.json"
    assert marks.is_file() and marks.stat().st_mode & 0o077 == 0
    assert json.loads(marks.read_text())["executors"][NAME]["version"] == "0.1.0"


@pytest.mark.parametrize(("older", "newer"), [
    ("0.1.0", "0.2.0"), ("0.9.0", "0.10.0"), ("1.0.0-rc.1", "1.0.0"), ("1.0.0-alpha", "1.0.0-beta"),
    ("1.0.0-2", "1.0.0-10"), ("1.0.0-9", "1.0.0-alpha"), ("1.2.3", "2.0.0"),
])
def test_version_order(older: str, newer: str) -> None:
    assert versions.compare_versions(older, newer) == -1
    assert versions.compare_versions(newer, older) == 1
    assert versions.compare_versions(newer, newer) == 0


def test_build_metadata_does_not_order_the_signing_time_does() -> None:
    assert versions.compare_versions("1.0.0+a", "1.0.0+b") == 0
    mark = versions.Mark("1.0.0+b", 200, "c" * 64, "m" * 64)
    older = SignedFacts("x", "1.0.0+a", "d" * 64, "n" * 64, 100)
    newer = SignedFacts("x", "1.0.0+a", "d" * 64, "n" * 64, 300)
    assert versions.rolled_back(older, mark) and not versions.rolled_back(newer, mark)
    same = SignedFacts("x", "1.0.0+b", "c" * 64, "m" * 64, 200)
    other = SignedFacts("x", "1.0.0+b", "e" * 64, "m" * 64, 200)  # same second, other code
    assert not versions.rolled_back(same, mark) and versions.rolled_back(other, mark)


def test_an_unreadable_marks_file_admits_no_owner_executor(home: Path) -> None:
    _sign()
    (home / "keys" / versions.MARKS_FILE).write_text("{not json")
    refusal = _refusal(home)
    assert refusal is not None and refusal[0] == "ERR_EXECUTOR_MARKS_UNREADABLE"

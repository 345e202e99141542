"""The laptop's side checks everything again (`metnos.features.remote.worker.handle`), without
Prefect: its own registry and keys, the policy on its own workspace, the real sandbox; and the
server reads a laptop's reply as untrusted data (`record.checked_items`, `server.reply_of`)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.features.remote import record, worker
from metnos.features.remote.server import RemoteFailed, reply_of
from metnos.ground import keys
from metnos.ground.settings import I18nSettings, Settings
from tests.support.home import MakeHome
from tests.support.worker import laptop_home

ACTION = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
PHOTOS = {"b.jpg": b"bee" * 100, "a.JPG": b"ay" * 50, "c.txt": b"text"}


@pytest.fixture
def laptop(make_home: MakeHome, tmp_path: Path) -> tuple[Settings, Settings]:
    server = make_home(lang="en").settings
    home = laptop_home(tmp_path / "laptop", server)
    settings = Settings(home=home, i18n=I18nSettings(
        resources_dir=tmp_path / "laptop" / "laptop-resources"))
    (settings.workspace / "photos").mkdir()
    for name, data in PHOTOS.items():
        (settings.workspace / "photos" / name).write_bytes(data)
    return server, settings


def request(phase: str, **extra: Any) -> dict[str, Any]:
    return {"phase": phase, "executor": "photo_rename", "place": "laptop", "action_id": ACTION,
            "args": {"folder": "photos", "prefix": "p-"}, **extra}


def names(settings: Settings) -> list[str]:
    return sorted(p.name for p in (settings.workspace / "photos").iterdir())


def signed_by(key: Ed25519PrivateKey, items: list[dict[str, Any]]) -> dict[str, Any]:
    return record.sign(record.new_manifest(
        action_id=ACTION, executor="photo_rename", place="laptop", pool="laptop",
        folder="photos", args={"folder": "photos", "prefix": "p-"}, items=items), key)


@pytest.mark.parametrize(("args", "key"), [
    ({"folder": "../outside", "prefix": "p-"}, "ERR_PATH_OUTSIDE_WORKSPACE"),
    ({"folder": "~/.ssh", "prefix": "p-"}, "ERR_PATH_FORBIDDEN"),
    ({"folder": "photos", "prefix": "p-", "phase": "apply"}, "ERR_ARGS_INVALID"),  # host-set
    ({"folder": "photos"}, "ERR_ARGS_INVALID"),
])
async def test_the_policy_runs_again_on_the_laptop(laptop: tuple[Settings, Settings],
                                                   args: dict[str, Any], key: str) -> None:
    _, settings = laptop
    reply = await worker.handle({**request("prepare"), "args": args}, settings)
    assert reply["ok"] is False and reply["key"] == key, reply
    assert names(settings) == sorted(PHOTOS)


async def test_only_the_place_it_is_meant_for_runs_it(laptop: tuple[Settings, Settings]) -> None:
    _, settings = laptop
    reply = await worker.handle({**request("prepare"), "place": "desk"}, settings)
    assert (reply["ok"], reply["key"]) == (False, "ERR_REMOTE_WRONG_PLACE")
    reply = await worker.handle({**request("prepare"), "executor": "fs_move"}, settings)
    assert (reply["ok"], reply["key"]) == (False, "ERR_REMOTE_WRONG_PLACE")


async def test_prepare_hashes_on_the_laptop_and_changes_nothing(
        laptop: tuple[Settings, Settings]) -> None:
    _, settings = laptop
    reply = await worker.handle(request("prepare"), settings)
    assert reply["ok"] is True, reply
    assert reply["items"] == [
        {"src": "photos/a.JPG", "dst": "photos/p-0001.jpg", "size": 100,
         "sha256": hashlib.sha256(PHOTOS["a.JPG"]).hexdigest()},
        {"src": "photos/b.jpg", "dst": "photos/p-0002.jpg", "size": 300,
         "sha256": hashlib.sha256(PHOTOS["b.jpg"]).hexdigest()}]
    assert names(settings) == sorted(PHOTOS)


async def test_apply_needs_the_servers_signature_and_unchanged_files(
        laptop: tuple[Settings, Settings]) -> None:
    server, settings = laptop
    items = (await worker.handle(request("prepare"), settings))["items"]
    # no record, or one signed by another key: nothing moves
    for rec in (None, signed_by(Ed25519PrivateKey.generate(), items)):
        reply = await worker.handle(request("apply", record=rec), settings)
        assert (reply["ok"], reply["key"]) == (False, "ERR_REMOTE_RECORD_INVALID")
    # a record signed for another action
    other = signed_by(keys.load_private_key(server.keys_dir, "audit"), items)
    reply = await worker.handle({**request("apply", record=other), "action_id": "x" * 32},
                                settings)
    assert (reply["ok"], reply["key"]) == (False, "ERR_REMOTE_RECORD_INVALID")
    # signed by the server, but a file changed since it was hashed
    good = signed_by(keys.load_private_key(server.keys_dir, "audit"), items)
    (settings.workspace / "photos" / "b.jpg").write_bytes(b"edited meanwhile")
    reply = await worker.handle(request("apply", record=good), settings)
    assert (reply["ok"], reply["key"]) == (False, "ERR_REMOTE_CHANGED")
    assert names(settings) == sorted(PHOTOS)


async def test_undo_moves_back_what_is_unchanged_and_names_the_rest(
        laptop: tuple[Settings, Settings]) -> None:
    server, settings = laptop
    items = (await worker.handle(request("prepare"), settings))["items"]
    good = signed_by(keys.load_private_key(server.keys_dir, "audit"), items)
    reply = await worker.handle(request("apply", record=good), settings)
    assert reply == {"ok": True, "result": {"folder": "photos", "renamed": 2}}
    assert names(settings) == ["c.txt", "p-0001.jpg", "p-0002.jpg"]
    (settings.workspace / "photos" / "p-0002.jpg").write_bytes(b"edited after the rename")
    reply = await worker.handle(request("undo", record=good), settings)
    assert reply["result"] == {"restored": ["photos/a.JPG"], "kept": [],
                               "failed": ["photos/p-0002.jpg"]}
    assert names(settings) == ["a.JPG", "c.txt", "p-0002.jpg"]
    assert (settings.workspace / "photos" / "a.JPG").read_bytes() == PHOTOS["a.JPG"]


@pytest.mark.parametrize("items", [
    [{"src": "photos/../etc/passwd", "dst": "photos/x.jpg", "size": 1, "sha256": "0" * 64}],
    [{"src": "other/a.jpg", "dst": "photos/x.jpg", "size": 1, "sha256": "0" * 64}],
    [{"src": "photos/a.jpg", "dst": "photos/.hidden", "size": 1, "sha256": "0" * 64}],
    [{"src": "photos/a.jpg", "dst": "photos/a.jpg", "size": 1, "sha256": "0" * 64}],
    [{"src": "photos/a.jpg", "dst": "photos/x.jpg", "size": -1, "sha256": "0" * 64}],
    [{"src": "photos/a.jpg", "dst": "photos/x.jpg", "size": 1, "sha256": "nothex"}],
    [{"src": "photos/a.jpg", "dst": "photos/x.jpg", "size": 1, "sha256": "0" * 64, "x": 1}],
    "not a list",
])
def test_the_server_checks_the_laptops_batch(items: Any) -> None:
    with pytest.raises(record.RecordError):
        record.checked_items(items, "photos")


@pytest.mark.parametrize("message", [
    "not json", "[]", '{"ok": "yes"}', '{"ok": false, "key": "made up"}',
    '{"ok": false, "key": "ERR_NO_SUCH_MESSAGE_ANYWHERE"}',
])
def test_a_reply_the_server_cannot_use_is_refused(message: str) -> None:
    with pytest.raises(RemoteFailed) as caught:
        reply_of(message, "laptop")
    assert caught.value.key == "ERR_REMOTE_REPLY_INVALID"


def test_a_refusal_keeps_a_known_key_and_plain_values() -> None:
    message = '{"ok": false, "key": "ERR_PATH_FORBIDDEN", "vars": {"path": ["~/.ssh"]}}'
    with pytest.raises(RemoteFailed) as caught:
        reply_of(message, "laptop")
    assert caught.value.key == "ERR_REMOTE_REFUSED"
    assert caught.value.vars == {"place": "laptop", "reason_key": "ERR_PATH_FORBIDDEN",
                                 "path": "['~/.ssh']"}

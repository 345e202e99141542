"""Photos and documents sent to Metnos: their kind from their bytes (a lie is refused), kept
outside the workspace, filed by the turn that names them and shown to the model as data; only
the person who sent a file may use it, and a planted link never takes it out of the workspace.
Real gateway, real database, the Prefect turn flow and a scripted model on loopback."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from metnos.features.attachments import AttachmentRefused, file_all, keep, mark_filed, owned
from metnos.features.attachments.kinds import claimed, sniff
from metnos.features.attachments.store import forget_unused
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, make_engine
from metnos.testing.llm_server import ScriptedLLM
from tests.gateway.test_attacks import audit_lines
from tests.gateway.test_turns import wait_closed
from tests.support.home import MakeHome, gateway_client
from tests.support.pdfs import text_pdf


def photo(kind: str = "JPEG", size: tuple[int, int] = (640, 480)) -> bytes:
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).text((20, 20), "SUPERMERCATO  TOTALE 12,40", fill="black")
    out = io.BytesIO()
    image.save(out, kind)
    return out.getvalue()


def pdf_bytes(tmp_path: Path) -> bytes:
    text_pdf(tmp_path / "x.pdf", ["Fattura n. 7"])
    return (tmp_path / "x.pdf").read_bytes()


def test_the_bytes_decide_the_kind_and_a_claim_can_only_agree(tmp_path: Path) -> None:
    jpeg, png = sniff(photo()), sniff(photo("PNG", (300, 200)))
    assert jpeg is not None and (jpeg.kind, jpeg.width, jpeg.height) == ("jpeg", 640, 480)
    assert png is not None and (png.kind, png.width, png.height) == ("png", 300, 200)
    heic = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + bytes(64)
    assert sniff(heic) == sniff(heic[:40]) and getattr(sniff(heic), "kind", None) == "heic"
    found = sniff(pdf_bytes(tmp_path))
    assert found is not None and found.kind == "pdf"
    assert getattr(sniff(b"Spesa: latte, pane\n"), "kind", None) == "text"
    assert sniff(b"\x00\x01\x02garbage") is None
    assert getattr(sniff("Però, caffè: 3€\r\n".encode("cp1252")), "kind", None) == "text"
    assert sniff(b"\x1b\x02\x03 binary \x7f") is None
    assert sniff("è".encode() * 40_000) is not None  # a long text cut inside a character
    assert claimed("scontrino.JPG", None) == {"jpeg"}
    assert claimed("notes", "application/octet-stream") == set()
    assert claimed("a.png", "application/pdf") == {"png", "pdf"}  # both must agree


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_a_photo_is_kept_then_filed_and_described_to_the_model(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str, lang: str) -> None:
    home = make_home(llm=scripted_llm, lang=lang)
    scripted_llm.enqueue_text("Ok.")
    async with gateway_client(home) as client:
        sent = await client.post("/api/attachments", params={"name": "IMG_0042.jpg"},
                                 content=photo(), headers={"content-type": "image/jpeg"})
        assert sent.status_code == 201, sent.text
        item = sent.json()
        assert (item["name"], item["kind"], item["width"], item["height"]) == (
            "IMG_0042.jpg", "jpeg", 640, 480)
        kept = home.path / "attachments" / item["id"]
        assert kept.read_bytes() == photo()
        assert not list(home.workspace.rglob("IMG_0042*"))  # not in the workspace yet
        resp = await client.post("/api/turns", json={"attachments": [item["id"]]})
        assert resp.status_code == 200, resp.text
        await wait_closed(client, resp.json()["turn_id"])
        page = (await client.get(f"/api/sessions/{resp.json()['session_id']}/messages")).json()
    said = i18n.get("MSG_ATTACHMENT_ONLY", lang, count=1)
    assert page["messages"][0]["content"] == f"{said}\n\n📎 IMG_0042.jpg"  # as it was sent
    day = datetime.now(home.settings.tz).date().isoformat()
    filed = home.workspace / "inbox" / day / "IMG_0042.jpg"
    assert filed.read_bytes() == photo()
    [request] = scripted_llm.requests
    user = request["messages"][-1]["content"]
    assert user.startswith(i18n.get("MSG_ATTACHMENT_ONLY", lang, count=1))
    block = user.split('<untrusted-data source="attachment"', 1)[1]
    facts = json.loads(block.split(">", 1)[1].split("</untrusted-data", 1)[0])
    assert facts == {"path": f"inbox/{day}/IMG_0042.jpg", "name": "IMG_0042.jpg",
                     "kind": "jpeg", "bytes": len(photo()), "width": 640, "height": 480}
    lines = [x for x in audit_lines(home) if x["action"] == "attachment"]
    assert [x["reason"] for x in lines] == ["stored", "filed"]
    assert lines[1]["turn_id"] == resp.json()["turn_id"]


async def test_a_file_whose_bytes_lie_is_refused_and_nothing_is_kept(
        make_home: MakeHome, tmp_path: Path) -> None:
    home = make_home(lang="en", METNOS_ATTACHMENTS_MAX_BYTES="200000")
    async with gateway_client(home, prefect=False) as client:
        liar = await client.post("/api/attachments", params={"name": "receipt.jpg"},
                                 content=pdf_bytes(tmp_path))
        text_as_png = await client.post("/api/attachments", content=b"just words\n",
                                        headers={"content-type": "image/png"})
        unknown = await client.post("/api/attachments", params={"name": "x.bin"},
                                    content=b"\x00\x01\x02\x03" * 10)
        empty = await client.post("/api/attachments", params={"name": "x.jpg"}, content=b"")
        big = await client.post("/api/attachments", params={"name": "big.png"},
                                content=photo("PNG", (2000, 2000)) + bytes(300_000))
    assert (liar.status_code, liar.json()["error"]["key"]) == (
        415, "ERR_ATTACHMENT_TYPE_MISMATCH")
    assert "receipt.jpg" in liar.json()["error"]["message"]
    assert (text_as_png.status_code, text_as_png.json()["error"]["key"]) == (
        415, "ERR_ATTACHMENT_TYPE_MISMATCH")
    assert (unknown.status_code, unknown.json()["error"]["key"]) == (
        415, "ERR_ATTACHMENT_TYPE_UNSUPPORTED")
    assert empty.status_code == 400
    assert big.status_code == 413
    assert not (home.path / "attachments").exists() or not any(
        (home.path / "attachments").iterdir())
    denied = [x for x in audit_lines(home) if x["action"] == "attachment"]
    assert [x["reason"] for x in denied] == [
        "ERR_ATTACHMENT_TYPE_MISMATCH", "ERR_ATTACHMENT_TYPE_MISMATCH",
        "ERR_ATTACHMENT_TYPE_UNSUPPORTED", "ERR_ATTACHMENT_EMPTY"]  # 413: refused at the door
    assert all(x["decision"] == "deny" for x in denied)


async def test_someone_elses_attachment_cannot_be_used_and_the_attempt_is_audited(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="it")
    engine = make_engine(database_url(home.settings))
    theirs = keep(engine, home.settings, None, photo(), name="privata.jpg",
                  media_type=None, user_id="telegram:4242", channel="telegram")
    engine.dispose()
    async with gateway_client(home, prefect=False) as client:
        resp = await client.post("/api/turns", json={"text": "archivia questa",
                                                     "attachments": [theirs.id]})
        made_up = await client.post("/api/turns", json={"attachments": ["nope"]})
    assert resp.status_code == 404 and made_up.status_code == 404
    assert resp.json()["error"]["key"] == "ERR_ATTACHMENT_NOT_FOUND"
    assert scripted_llm.requests == []  # no turn
    assert not (home.workspace / "inbox").exists()
    denied = [x for x in audit_lines(home) if x["action"] == "attachment"]
    assert [(x["decision"], x["reason"], x["outcome"]) for x in denied] == [
        ("deny", "not_owned", theirs.id), ("deny", "not_owned", "nope")]


async def test_a_link_planted_as_the_inbox_never_takes_the_file_outside(
        make_home: MakeHome, scripted_llm: ScriptedLLM, tmp_path: Path) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    outside = tmp_path / "outside"
    outside.mkdir()
    (home.workspace / "inbox").symlink_to(outside)
    async with gateway_client(home, prefect=False) as client:
        sent = await client.post("/api/attachments", params={"name": "a.png"},
                                 content=photo("PNG"))
        resp = await client.post("/api/turns", json={"attachments": [sent.json()["id"]]})
    assert resp.status_code == 400
    assert resp.json()["error"]["key"] == "ERR_ATTACHMENT_FILING_FAILED"
    assert list(outside.iterdir()) == []
    assert scripted_llm.requests == []


async def test_a_name_with_folders_and_controls_is_kept_as_one_plain_name(
        make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with gateway_client(home, prefect=False) as client:
        sent = await client.post("/api/attachments", params={
            "name": "../../.ssh/\x1b[31mkeys\u202e.png"}, content=photo("PNG"))
        bare = await client.post("/api/attachments", content=photo())
    assert sent.status_code == 201, sent.text
    assert sent.json()["name"] == "_[31mkeys_.png"
    assert bare.json()["name"] == "photo.jpg"


async def test_a_turn_refused_at_its_start_leaves_nothing_filed(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_MAX_MESSAGE_CHARS="400")
    async with gateway_client(home, prefect=False) as client:
        sent = await client.post("/api/attachments", params={"name": "a.png"},
                                 content=photo("PNG"))
        resp = await client.post("/api/turns", json={"text": "x" * 401,
                                                     "attachments": [sent.json()["id"]]})
        assert resp.status_code == 413, resp.text
        again = await client.post("/api/turns", json={"attachments": [sent.json()["id"]]})
    assert again.status_code == 200
    day = datetime.now(home.settings.tz).date().isoformat()
    assert sorted(p.name for p in (home.workspace / "inbox" / day).iterdir()) == ["a.png"]


def test_kept_bytes_go_after_keep_days_and_an_unused_file_is_forgotten(
        make_home: MakeHome) -> None:
    home = make_home(lang="en")
    engine = make_engine(database_url(home.settings))
    try:
        unused, used = (keep(engine, home.settings, None, photo(), name=n, media_type=None,
                             user_id="owner", channel="api") for n in ("u.jpg", "f.jpg"))
        [filed] = file_all(home.settings, [used])
        mark_filed(engine, None, [filed], turn_id="t1")
        assert forget_unused(engine, home.settings) == 0  # too young
        later = datetime.now(UTC) + timedelta(days=home.settings.attachments.keep_days + 1)
        assert forget_unused(engine, home.settings, now=later) == 2
        assert not any((home.path / "attachments").iterdir())
        with pytest.raises(AttachmentRefused, match="ERR_ATTACHMENT_NOT_FOUND"):
            owned(engine, [unused.id], user_id="owner", channel="api", audit=None)
        [row] = owned(engine, [used.id], user_id="owner", channel="api", audit=None)
        assert file_all(home.settings, [row])[0].path == filed.path  # still there
        (home.workspace / filed.path).unlink()  # moved away since: its bytes are gone too
        with pytest.raises(AttachmentRefused, match="ERR_ATTACHMENT_NOT_FOUND"):
            file_all(home.settings, [row])
    finally:
        engine.dispose()

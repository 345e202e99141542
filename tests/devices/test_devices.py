"""Devices over the overlay and family members (issue 30, parts 1 and 2), over real HTTP.

The gateway listens on loopback and on an overlay address of a dummy interface; two
"devices" speak from two other overlay addresses. What must hold: before the ceremony a
device reaches nothing but the ceremony (not even with the owner's token); after it, it
speaks as the person it belongs to and no one else; a member cannot approve the owner's
action, read another's conversation, use the owner's pages, or carry another device's
credential; a revoked device is refused at its next request; every refusal is audited.
"""

from __future__ import annotations

import socket as socket_module
from collections.abc import Iterator

import pytest
import websockets
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.devices.support import Served, admit, served
from tests.support.home import MakeHome
from tests.support.overlay import Addresses
from tests.support.pg import free_port

pytestmark = pytest.mark.attack


@pytest.fixture
def gateway(make_home: MakeHome, scripted_llm: ScriptedLLM,
            overlay: Addresses) -> Iterator[Served]:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_GATEWAY_EXPOSE=overlay.server,
                     METNOS_GATEWAY_EXPOSE_NAME="metnos.family.test")
    with served(home, overlay.server) as found:
        yield found


def open_chat(gateway: Served, address: str, cookie: str) -> ClientConnection:
    """The chat's WebSocket, opened from the device at `address` with its credential."""
    sock = socket_module.create_connection((gateway.server, gateway.port),
                                           source_address=(address, 0))
    return connect(f"ws://{gateway.server}:{gateway.port}/api/chat", sock=sock,
                   origin=Origin(gateway.overlay),
                   additional_headers={"Cookie": f"metnos_device={cookie}"})


def reasons(gateway: Served, action: str, decision: str | None = None) -> list[str]:
    return [line["reason"] for line in gateway.audit() if line["action"] == action
            and decision in (None, line["decision"])]


def test_before_the_ceremony_only_the_ceremony_answers(gateway: Served,
                                                        overlay: Addresses) -> None:
    with gateway.device(overlay.devices[0]) as phone:
        page = phone.get("/", headers={"Accept": "text/html"})
        assert page.status_code == 303 and page.headers["location"] == "/device"
        assert phone.get("/device").status_code == 200
        for path in ("/api/sessions", "/api/approvals", "/static/chat.js", "/docs"):
            refused = phone.get(path)
            assert refused.status_code == 401, (path, refused.text)
            assert refused.json()["error"]["key"] == "ERR_DEVICE_NOT_ADMITTED"
        # the owner's token is the server's, not the overlay's
        token = phone.get("/api/sessions", headers=gateway.home.auth())
        assert token.status_code == 401
        assert phone.post("/api/turns", json={"text": "hello"},
                          headers=gateway.home.auth()).status_code == 401
        # the overlay's listener knows the overlay's names only, and the reverse
        assert phone.get("/device", headers={"Host": "127.0.0.1"}).status_code == 403
        assert phone.get("/device", headers={"Host": "metnos.family.test:1"}).status_code == 200
        blank = phone.post("/device/ask", json={"label": " \u202e\n "})
        assert blank.status_code == 422 and "metnos_device" not in phone.cookies
        # a page of another origin cannot start the ceremony for the browser
        foreign = phone.post("/device/ask", json={"label": "x"},
                             headers={"Origin": "http://evil.example"})
        assert foreign.status_code == 403
    with gateway.owner() as owner:  # the ceremony is not on loopback at all
        assert owner.get("/device").status_code == 404
        assert owner.get("/api/sessions", headers={"Host": "metnos.family.test"}
                         ).status_code == 403


def test_a_member_device_chats_as_its_person_and_never_as_the_owner(
        gateway: Served, overlay: Addresses, scripted_llm: ScriptedLLM) -> None:
    with gateway.owner() as owner:
        scripted_llm.route("tok-owner", ToolCall("fs_write", {"path": "owner.txt",
                                                              "content": "hi\n"}),
                           final_text="written")
        mine = owner.post("/api/turns", json={"text": "write tok-owner", "lang": "en"}).json()
        assert mine["status"] == "awaiting_approval", mine
        [pending] = mine["approvals"]
    with gateway.device(overlay.devices[0]) as phone:
        paired = admit(gateway, phone, "Anna's phone")
        assert paired["role"] == "member" and paired["channel"] == "device"
        member = paired["user_id"]
        scripted_llm.enqueue_text("Hello Anna")
        turn = phone.post("/api/turns", json={"text": "hello", "lang": "en"})
        assert turn.status_code == 200 and turn.json()["reply"] == "Hello Anna", turn.text
        sessions = phone.get("/api/sessions").json()["sessions"]
        assert [s["session_id"] for s in sessions] == [turn.json()["session_id"]]
        # the owner's conversation, turn and approval are not the member's
        assert phone.get(f"/api/sessions/{mine['session_id']}/messages").status_code == 404
        assert phone.get(f"/api/turns/{mine['turn_id']}").status_code == 404
        assert phone.get(f"/api/turns/{mine['turn_id']}/events").status_code == 404
        assert phone.get("/api/approvals").json()["approvals"] == []
        decided = phone.post(f"/api/approvals/{pending['approval_id']}",
                             json={"decision": "approve"})
        assert decided.status_code == 403, decided.text
        # the owner's pages and powers
        for method, path in (("GET", "/api/audit"), ("GET", "/api/pairing"),
                             ("POST", "/api/pairing/approve"), ("GET", "/api/devices"),
                             ("GET", "/api/trash")):
            answer = phone.request(method, path, json={"code": "ABCDEFGH"}
                                   if method == "POST" else None)
            assert answer.status_code == 403, (path, answer.text)
            assert answer.json()["error"]["key"] == "ERR_AUTH_OWNER_ONLY"
        page = phone.get("/", headers={"Accept": "text/html"})
        assert page.status_code == 200 and 'id="show-pairing"' not in page.text
    with gateway.owner() as owner:
        waiting = owner.get("/api/approvals").json()["approvals"]
        assert [a["approval_id"] for a in waiting] == [pending["approval_id"]]
    lines = gateway.audit()
    assert any(ln["reason"] == "ERR_APPROVAL_WRONG_USER" and ln["sender"] == member
               for ln in lines)
    assert reasons(gateway, "session.read") == ["ERR_SESSION_NOT_FOUND"]
    assert "ERR_TURN_NOT_FOUND" in reasons(gateway, "turn.read")
    assert reasons(gateway, "gateway.owner_only").count("ERR_AUTH_OWNER_ONLY") == 5


def test_a_credential_is_worth_nothing_from_another_device(gateway: Served,
                                                          overlay: Addresses) -> None:
    owner_phone, member_phone = overlay.devices
    with gateway.device(owner_phone) as phone:
        paired = admit(gateway, phone, "my phone", person="owner")
        assert paired["role"] == "owner" and paired["user_id"] == "owner"
        assert phone.get("/api/audit").status_code == 200  # the owner's own device
        stolen = phone.cookies.get("metnos_device")
        assert stolen
    with gateway.device(member_phone) as thief:
        thief.cookies.set("metnos_device", stolen)
        answer = thief.get("/api/audit")
        assert answer.status_code == 401
        device_id, _, signature = stolen.partition(".")
        forged = f"{device_id}.{signature[::-1]}"
        thief.cookies.set("metnos_device", forged)
        assert thief.get("/api/sessions").status_code == 401
    assert reasons(gateway, "device", "deny") == ["ERR_DEVICE_ADDRESS_MISMATCH",
                                          "ERR_DEVICE_CREDENTIAL_INVALID"]


def test_two_members_never_see_each_other(gateway: Served, overlay: Addresses,
                                         scripted_llm: ScriptedLLM) -> None:
    anna_at, luca_at = overlay.devices
    with gateway.device(anna_at) as anna, gateway.device(luca_at) as luca:
        anna_id = admit(gateway, anna, "Anna's phone")["user_id"]
        luca_id = admit(gateway, luca, "Luca's laptop")["user_id"]
        assert anna_id != luca_id
        scripted_llm.enqueue_text("Noted for Anna.")
        hers = anna.post("/api/turns", json={"text": "my diary", "lang": "en"}).json()
        assert luca.get(f"/api/sessions/{hers['session_id']}/messages").status_code == 404
        assert luca.get(f"/api/sessions/{hers['session_id']}").status_code == 404
        assert luca.patch(f"/api/sessions/{hers['session_id']}",
                          json={"ask_all": True}).status_code == 404
        assert luca.get(f"/api/turns/{hers['turn_id']}").status_code == 404
        assert luca.get("/api/sessions").json()["sessions"] == []
        # a turn sent into Anna's conversation opens one of Luca's own, never joins hers
        scripted_llm.enqueue_text("Noted for Luca.")
        his = luca.post("/api/turns", json={"text": "hi", "session_id": hers["session_id"],
                                            "lang": "en"}).json()
        assert his["session_id"] != hers["session_id"]
    denied = [ln for ln in gateway.audit() if ln["action"] in ("session.read", "turn.read")]
    assert {ln["sender"] for ln in denied} == {luca_id} and len(denied) == 4


def test_a_revoked_device_is_refused_at_once(gateway: Served, overlay: Addresses,
                                            scripted_llm: ScriptedLLM) -> None:
    with gateway.device(overlay.devices[0]) as phone:
        paired = admit(gateway, phone, "Luca's laptop")
        assert phone.get("/api/sessions").status_code == 200
        socket = open_chat(gateway, overlay.devices[0], phone.cookies["metnos_device"])
        with gateway.owner() as owner:
            listed = owner.get("/api/devices").json()["devices"]
            assert [(d["label"], d["state"], d["address"]) for d in listed] == [
                ("Luca's laptop", "admitted", overlay.devices[0])]
            gone = owner.post(f"/api/devices/{paired['sender_id']}/revoke")
            assert gone.status_code == 200, gone.text
            assert owner.get("/api/devices").json()["devices"][0]["state"] == "revoked"
        refused = phone.get("/api/sessions")
        assert refused.status_code == 401
        assert "metnos_device" not in phone.cookies  # refused once, then forgotten
        with pytest.raises(websockets.ConnectionClosed):  # its open chat was closed
            socket.recv(timeout=10)
        socket.close()
        assert phone.get("/", headers={"Accept": "text/html"}).headers["location"] == "/device"
        assert phone.get("/device/state").json() == {"state": "none"}
    assert reasons(gateway, "device", "deny") == ["ERR_DEVICE_REVOKED"]
    assert "MSG_PAIRING_REVOKED" in reasons(gateway, "pairing")


def test_a_wrong_person_is_refused_and_nobody_is_paired(gateway: Served,
                                                        overlay: Addresses) -> None:
    with gateway.device(overlay.devices[0]) as phone:
        code = phone.post("/device/ask", json={"label": "tablet"}).json()["code"]
        with gateway.owner() as owner:
            wrong = owner.post("/api/pairing/approve",
                               json={"code": code, "person": "telegram:404"})
            assert wrong.status_code == 422
            assert wrong.json()["error"]["key"] == "ERR_PAIRING_PERSON_UNKNOWN"
        assert phone.get("/device/state").json() == {"state": "waiting"}

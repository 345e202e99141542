"""Attacks on the Prefect API of the real `metnos serve` topology (issue 10 §1).

Prefect's defaults (CORS `*`, no auth, CSRF off) let any web page, or any local process,
find a paused turn and resume it with "approve". Here a turn waits for the owner's approval of
an `fs_write`, and an attacker tries what was tried then: a foreign-origin preflight, the
filter and resume calls without credentials, a simple (non-preflighted) cross-site POST, a
wrong password, the right credential without the CSRF token, the events WebSocket. The file
must stay unwritten and the run paused. Then the owner, with the credential and a CSRF token
(what the Prefect UI sends), approves: the file is written. A resume with the right
credential is still bound to the approval's digest and expiry, and leaves its audit line.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests.support.serve_process import ServedInstance, served_instance

EVIL = "http://evil.example"
APPROVAL_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def instance(compiled_catalog: Path) -> Iterator[ServedInstance]:
    with served_instance(compiled_catalog, METNOS_LANG="en",
                         METNOS_POLICY_APPROVAL_TIMEOUT_S=str(APPROVAL_TIMEOUT_S)) as served:
        yield served


def basic(credential: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(credential.encode()).decode()}


def csrf_headers(inst: ServedInstance, credential: str) -> dict[str, str]:
    """What the Prefect UI (and Prefect's client) add to a state-changing request."""
    client_id = str(uuid.uuid4())
    resp = httpx.get(f"{inst.prefect}/api/csrf-token", params={"client": client_id},
                     headers=basic(credential))
    assert resp.status_code == 200, resp.text
    return {**basic(credential), "Prefect-Csrf-Token": resp.json()["token"],
            "Prefect-Csrf-Client": client_id}


def paused_write(inst: ServedInstance, name: str) -> dict[str, Any]:
    """A turn asking to write `name`, once its flow run is paused in Prefect."""
    turn = httpx.post(f"{inst.gateway}/api/turns", headers=inst.owner_headers(), timeout=60,
                      json={"text": f'write "milk, bread" to the file {name}', "lang": "en"})
    body = turn.json()
    assert body["status"] == "awaiting_approval", body
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = httpx.get(f"{inst.gateway}/api/turns/{body['turn_id']}",
                          headers=inst.owner_headers()).json()
        run_id = state.get("flow_run_id")
        if run_id and run_state(inst, run_id) == "PAUSED":
            return {**body, "flow_run_id": run_id}
        time.sleep(0.2)
    raise AssertionError("the turn's flow run never paused")


def run_state(inst: ServedInstance, run_id: str) -> str:
    resp = httpx.get(f"{inst.prefect}/api/flow_runs/{run_id}",
                     headers=basic(inst.prefect_credential()))
    assert resp.status_code == 200, resp.text
    return str(resp.json()["state"]["type"])


def resume_url(inst: ServedInstance, run_id: str) -> str:
    return f"{inst.prefect}/api/flow_runs/{run_id}/resume"


APPROVE = {"run_input": {"decision": "approve", "reason": "attacker"}}


def assert_untouched(inst: ServedInstance, turn: dict[str, Any], name: str) -> None:
    assert not (inst.home / "workspace" / name).exists()
    assert run_state(inst, turn["flow_run_id"]) == "PAUSED"


@pytest.mark.attack
def test_foreign_origin_preflight_is_refused(instance: ServedInstance) -> None:
    resp = httpx.options(f"{instance.prefect}/api/flow_runs/filter", headers={
        "Origin": EVIL, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,authorization"})
    assert resp.status_code == 400
    assert "access-control-allow-origin" not in resp.headers
    own = httpx.options(f"{instance.prefect}/api/flow_runs/filter", headers={
        "Origin": instance.prefect, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,authorization"})
    assert own.headers.get("access-control-allow-origin") == instance.prefect


@pytest.mark.attack
def test_without_credentials_nothing_is_listed_or_resumed(instance: ServedInstance) -> None:
    turn = paused_write(instance, "no-credentials.txt")
    run_id = turn["flow_run_id"]
    listed = httpx.post(f"{instance.prefect}/api/flow_runs/filter", headers={"Origin": EVIL},
                        json={"flow_runs": {"state": {"type": {"any_": ["PAUSED"]}}}})
    assert listed.status_code in (401, 403)
    assert run_id not in listed.text
    assert httpx.get(f"{instance.prefect}/api/flow_runs/{run_id}").status_code == 401
    assert httpx.get(f"{instance.prefect}/api/flow_runs/{run_id}/input/"
                     f"paused-approval-{turn['approvals'][0]['approval_id']}-schema"
                     ).status_code == 401
    resumed = httpx.post(resume_url(instance, run_id), headers={"Origin": EVIL}, json=APPROVE)
    assert resumed.status_code in (401, 403)
    # with a CSRF token from a client that has no credential either: still no
    token = httpx.get(f"{instance.prefect}/api/csrf-token", params={"client": "x"})
    assert token.status_code == 401
    assert_untouched(instance, turn, "no-credentials.txt")


@pytest.mark.attack
def test_a_simple_cross_site_post_is_refused(instance: ServedInstance) -> None:
    """What a form or `fetch(..., {mode: "no-cors"})` on a foreign page can send: no
    preflight, text/plain, no custom header."""
    turn = paused_write(instance, "simple-post.txt")
    resp = httpx.post(resume_url(instance, turn["flow_run_id"]), content=json.dumps(APPROVE),
                      headers={"Origin": EVIL, "Content-Type": "text/plain"})
    assert resp.status_code in (401, 403)
    assert_untouched(instance, turn, "simple-post.txt")


@pytest.mark.attack
def test_a_wrong_credential_is_refused(instance: ServedInstance) -> None:
    turn = paused_write(instance, "wrong-credential.txt")
    user, _, password = instance.prefect_credential().partition(":")
    for wrong in (f"{user}:{password[:-1]}", f"admin:{password}", user, f"{user}:"):
        resp = httpx.get(f"{instance.prefect}/api/flow_runs/{turn['flow_run_id']}",
                         headers=basic(wrong))
        assert resp.status_code == 401, wrong
    assert httpx.get(f"{instance.prefect}/api/flow_runs/{turn['flow_run_id']}",
                     headers={"Authorization": "Bearer " + password}).status_code == 401
    assert_untouched(instance, turn, "wrong-credential.txt")


@pytest.mark.attack
def test_the_credential_without_the_csrf_token_cannot_resume(instance: ServedInstance) -> None:
    turn = paused_write(instance, "no-csrf.txt")
    credential = instance.prefect_credential()
    resp = httpx.post(resume_url(instance, turn["flow_run_id"]), headers=basic(credential),
                      json=APPROVE)
    assert resp.status_code == 403
    forged = {**basic(credential), "Prefect-Csrf-Token": "0" * 64,
              "Prefect-Csrf-Client": str(uuid.uuid4())}
    assert httpx.post(resume_url(instance, turn["flow_run_id"]), headers=forged,
                      json=APPROVE).status_code == 403
    assert_untouched(instance, turn, "no-csrf.txt")


@pytest.mark.attack
def test_the_events_websocket_needs_the_credential(instance: ServedInstance) -> None:
    url = instance.prefect.replace("http://", "ws://") + "/api/events/out"
    with pytest.raises((InvalidStatus, ConnectionClosed)), connect(
            url, origin=EVIL, open_timeout=10) as legacy:  # type: ignore[arg-type]
        legacy.recv(timeout=10)  # no auth handshake at all: refused
    for token in (None, "metnos:guess"):
        with pytest.raises(ConnectionClosed), connect(
                url, origin=EVIL, subprotocols=["prefect"],  # type: ignore[arg-type,list-item]
                open_timeout=10) as ws:
            ws.send(json.dumps({"type": "auth", "token": token}))
            ws.send(json.dumps({"type": "filter", "filter": {}}))
            ws.recv(timeout=10)  # closed: no events for whoever is not the owner


def test_the_owner_approves_through_prefect_with_the_credential(
        instance: ServedInstance) -> None:
    turn = paused_write(instance, "owner.txt")
    credential = instance.prefect_credential()
    resp = httpx.post(resume_url(instance, turn["flow_run_id"]),
                      headers=csrf_headers(instance, credential),
                      json={"run_input": {"decision": "approve", "reason": "ok"}})
    assert resp.status_code == 201, resp.text
    assert resp.json()["status"] == "ACCEPT"
    final = wait_turn(instance, turn["turn_id"])
    assert final["status"] == "completed", final
    assert (instance.home / "workspace" / "owner.txt").read_text() == "milk, bread"
    lines = approval_lines(instance, turn["approvals"][0]["approval_id"])
    assert ("approval", "prefect-ui", "approved") in lines


@pytest.mark.attack
def test_a_resume_for_a_changed_file_runs_nothing(instance: ServedInstance) -> None:
    turn = paused_write(instance, "changed.txt")
    target = instance.home / "workspace" / "changed.txt"
    target.write_text("someone else's shopping\n")  # after the digest was taken
    resp = httpx.post(resume_url(instance, turn["flow_run_id"]),
                      headers=csrf_headers(instance, instance.prefect_credential()),
                      json={"run_input": {"decision": "approve"}})
    assert resp.status_code == 201, resp.text
    final = wait_turn(instance, turn["turn_id"])
    assert target.read_text() == "someone else's shopping\n"
    assert final["approvals"][0]["status"] != "used"
    lines = approval_lines(instance, turn["approvals"][0]["approval_id"])
    assert ("fs_write", "refused") in [(action, outcome) for action, _, outcome in lines]


@pytest.mark.attack
def test_a_resume_after_expiry_runs_nothing(instance: ServedInstance) -> None:
    turn = paused_write(instance, "expired.txt")
    approval_id = turn["approvals"][0]["approval_id"]
    deadline = time.monotonic() + APPROVAL_TIMEOUT_S + 30
    while time.monotonic() < deadline and run_state(instance, turn["flow_run_id"]) == "PAUSED":
        time.sleep(1)
    resp = httpx.post(resume_url(instance, turn["flow_run_id"]),
                      headers=csrf_headers(instance, instance.prefect_credential()),
                      json={"run_input": {"decision": "approve"}})
    assert resp.status_code != 201 or resp.json()["status"] != "ACCEPT", resp.text
    final = wait_turn(instance, turn["turn_id"])
    assert final["approvals"][0]["status"] == "expired"
    assert not (instance.home / "workspace" / "expired.txt").exists()
    assert any(outcome == "expired" for _, _, outcome in approval_lines(instance, approval_id))


def test_the_owner_approves_in_the_prefect_ui(instance: ServedInstance) -> None:
    """The Prefect UI, in headless Chromium: it asks for the credential (nothing is shown
    before), then its Resume form approves the paused turn and the file is written."""
    from playwright.sync_api import expect, sync_playwright

    from tests.webchat.conftest import FLAGS, ensure_chromium

    chromium = ensure_chromium()
    if chromium is None:
        assert not os.environ.get("CI"), "headless Chromium is missing in CI"
        pytest.skip("headless Chromium is missing")
    turn = paused_write(instance, "from-the-ui.txt")
    target = instance.home / "workspace" / "from-the-ui.txt"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=FLAGS)
        page = browser.new_page()
        page.goto(instance.prefect + "/")
        expect(page).to_have_url(re.compile(r"/login"), timeout=30_000)
        page.locator("input").first.fill(instance.prefect_credential())
        page.keyboard.press("Enter")
        expect(page).not_to_have_url(re.compile(r"/login"), timeout=30_000)
        page.goto(f"{instance.prefect}/runs/flow-run/{turn['flow_run_id']}")
        page.get_by_role("button", name="Resume").click()
        card = page.locator(".p-modal__card")
        expect(card).to_contain_text("fs_write", timeout=30_000)  # the exact action is shown
        card.locator(".p-select-button__control").first.click()
        page.keyboard.press("ArrowDown")
        page.get_by_role("option", name="approve").click()
        card.locator("textarea").first.fill("ok from the Prefect UI")
        card.get_by_role("button", name="Submit").click()
        final = wait_turn(instance, turn["turn_id"])
        browser.close()
    assert final["status"] == "completed", final
    assert target.read_text() == "milk, bread"
    assert ("approval", "prefect-ui", "approved") in approval_lines(
        instance, turn["approvals"][0]["approval_id"])


def test_the_served_deployments_run_behind_the_lock(instance: ServedInstance) -> None:
    """The runner of `metnos serve` registered its deployments and runs them, CSRF and all."""
    headers = csrf_headers(instance, instance.prefect_credential())
    deadline = time.monotonic() + 90  # the runner registers them shortly after start-up
    while True:
        found = httpx.post(f"{instance.prefect}/api/deployments/filter", headers=headers,
                           json={"deployments": {"name": {"any_": ["nightly"]}}})
        assert found.status_code == 200, found.text
        if len(found.json()) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(1)
    names = {d["name"] for d in found.json()}
    assert names == {"nightly"} and len(found.json()) == 3  # the sweep, audit, introvert
    flows = {f["id"]: f["name"] for f in httpx.post(
        f"{instance.prefect}/api/flows/filter", headers=headers, json={}).json()}
    audit_check = next(d for d in found.json() if flows[d["flow_id"]] == "audit-check")
    run = httpx.post(f"{instance.prefect}/api/deployments/{audit_check['id']}/create_flow_run",
                     headers=headers, json={})
    assert run.status_code == 201, run.text
    deadline = time.monotonic() + 120
    state = ""
    while time.monotonic() < deadline:
        state = run_state(instance, run.json()["id"])
        if state in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            break
        time.sleep(1)
    assert state == "COMPLETED"


def wait_turn(inst: ServedInstance, turn_id: str, timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body: dict[str, Any] = httpx.get(f"{inst.gateway}/api/turns/{turn_id}",
                                         headers=inst.owner_headers()).json()
        if body["status"] not in ("running", "awaiting_approval"):
            return body
        time.sleep(0.2)
    raise AssertionError(f"turn {turn_id} did not finish")


def approval_lines(inst: ServedInstance, approval_id: str) -> list[tuple[str, str, str]]:
    """(action, sender, outcome) of the audit lines about one approval."""
    resp = httpx.get(f"{inst.gateway}/api/audit", params={"limit": 500},
                     headers=inst.owner_headers())
    return [(r["action"], r["sender"], r["outcome"]) for r in resp.json()
            if r.get("approval_id") == approval_id]

"""`make run` in miniature: `metnos init` then `metnos serve` as real processes.

Embedded PostgreSQL, a Prefect server with its own database and the gateway, which serves the
scheduled deployments too, all start; a turn goes through HTTP and through `metnos chat`; the
flow run is in the Prefect API; SIGTERM stops everything in order and leaves no process behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from tests.support.serve_process import METNOS, init_home, stop_postgres, wait_ready
from tests.support.serve_process import instance_env as fresh_instance_env


@pytest.fixture
def instance_env() -> Iterator[dict[str, str]]:
    # Not under pytest's basetemp: pytest resets that tree to 0700 whenever a session starts,
    # and the embedded PostgreSQL (run as its own user when we are root) must traverse it.
    root = Path(tempfile.mkdtemp(prefix="metnos-serve-test-"))
    yield fresh_instance_env(root)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def served(instance_env: dict[str, str],
           compiled_catalog: Path) -> Iterator[subprocess.Popen[str]]:
    init_home(instance_env, compiled_catalog)  # init's own Tutor compile: tests/tutor
    again = subprocess.run([*METNOS, "init", "--json"], env=instance_env, capture_output=True,
                           text=True, timeout=600)
    assert json.loads(again.stdout)["created"] == []  # idempotent
    proc = subprocess.Popen([*METNOS, "serve"], env=instance_env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:  # the test failed half-way: leave nothing running
            os.killpg(proc.pid, signal.SIGKILL)
            stop_postgres(instance_env)


def test_serve_answers_a_turn_and_stops_cleanly(
        served: subprocess.Popen[str], instance_env: dict[str, str]) -> None:
    banner = wait_ready(served)
    gateway = f"http://127.0.0.1:{instance_env['METNOS_GATEWAY_PORT']}"
    prefect = f"http://127.0.0.1:{instance_env['METNOS_PREFECT_PORT']}"
    assert gateway in banner and prefect in banner
    health = httpx.get(f"{gateway}/healthz").json()
    assert health["status"] == "ok" and health["sandbox"] == "ok" and health["executors"] >= 4

    token = (Path(instance_env["METNOS_HOME"]) / "secrets" / "owner.token").read_text().strip()
    turn = httpx.post(f"{gateway}/api/turns", headers={"Authorization": f"Bearer {token}"},
                      json={"text": "cerca i file markdown nel workspace"}, timeout=60).json()
    assert turn["status"] == "completed" and "USER.md" in turn["reply"]

    chat = subprocess.run([*METNOS, "chat", "--lang", "en",
                           "find the markdown files in the workspace"], env=instance_env,
                          capture_output=True, text=True, timeout=60)
    assert chat.returncode == 0, chat.stderr
    assert "I found 6 files" in chat.stdout and "TELOS.md" in chat.stdout

    repl = subprocess.run([*METNOS, "chat", "--lang", "it"], env=instance_env, text=True,
                          input="elenca i file\n/esci\n", capture_output=True, timeout=60)
    assert repl.returncode == 0, repl.stderr
    assert "Metnos ti ascolta" in repl.stdout and "IDENTITY.md" in repl.stdout

    flow_run_id = None
    for _ in range(50):
        data = httpx.get(f"{gateway}/api/turns/{turn['turn_id']}",
                         headers={"Authorization": f"Bearer {token}"}).json()
        flow_run_id = data["flow_run_id"]
        if flow_run_id:
            break
        time.sleep(0.2)
    credential = (Path(instance_env["METNOS_HOME"]) / "secrets" / "prefect.auth").read_text()
    assert httpx.get(f"{prefect}/api/flow_runs/{flow_run_id}").status_code == 401  # locked
    run = httpx.get(f"{prefect}/api/flow_runs/{flow_run_id}",
                    auth=tuple(credential.strip().split(":", 1))).json()  # type: ignore[arg-type]
    assert run["name"].startswith("api · ") and "metnos-turn" in run["tags"]
    assert httpx.get(prefect).status_code == 200  # the UI is served
    the_gateway_serves_the_schedules(served, gateway, prefect, credential.strip())
    browse_the_web_chat(instance_env, gateway)

    children = psutil.Process(served.pid).children(recursive=True)
    served.send_signal(signal.SIGTERM)
    assert served.wait(timeout=90) == 0
    time.sleep(0.5)
    alive = [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert alive == [], f"left running: {[p.cmdline() for p in alive]}"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{gateway}/healthz")
    # Metnos's own progress is in the gateway's log beside uvicorn's and Prefect's lines
    log = (Path(instance_env["METNOS_HOME"]) / "logs" / "gateway.log").read_text()
    for line in ("gateway.ready executors=", "serve.schedules_served deployments=",
                 "gateway.stop signal=SIGTERM", "gateway.drained"):
        assert line in log, line


def the_gateway_serves_the_schedules(served: subprocess.Popen[str], gateway: str, prefect: str,
                                     credential: str) -> None:
    """The scheduled deployments are served from the gateway's process (issue 29): they are
    in Prefect, the runner's heartbeat is seen, and no process of the instance is a runner."""
    user, password = credential.split(":", 1)
    wanted = ("audit-check/nightly", "reminder/at", "tutor-catalog/check", "owner-task/scheduled")
    deadline = time.monotonic() + 90
    while True:
        served_now = [name for name in wanted if httpx.get(
            f"{prefect}/api/deployments/name/{name}", auth=(user, password)).status_code == 200]
        runner = httpx.get(f"{gateway}/healthz").json()["runner"]
        if len(served_now) == len(wanted) and runner == "alive":
            break
        assert time.monotonic() < deadline, (served_now, runner)
        time.sleep(1)
    lines = [" ".join(p.cmdline()) for p in psutil.Process(served.pid).children(recursive=True)]
    assert any("flows.gateway --schedules" in line for line in lines), lines
    assert not any("deployments.serve" in line for line in lines), lines


def browse_the_web_chat(env: dict[str, str], gateway: str) -> None:
    """The web chat of the real `metnos serve`, in headless Chromium: `metnos login`'s link,
    one message, the reply streamed back through the Prefect turn flow."""
    from playwright.sync_api import expect, sync_playwright

    from tests.webchat.conftest import FLAGS, ensure_chromium

    chromium = ensure_chromium()
    if chromium is None:
        assert not os.environ.get("CI"), "headless Chromium is missing in CI"
        return
    login = subprocess.run([*METNOS, "login", "--json"], env=env, capture_output=True,
                           text=True, timeout=60)
    assert login.returncode == 0, login.stderr
    link = json.loads(login.stdout)["url"]
    assert link.startswith(f"{gateway}/login?token=")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=FLAGS)
        page = browser.new_page(locale="it")
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(link)
        page.fill("#text", "cerca i file markdown nel workspace")
        page.keyboard.press("Enter")
        expect(page.locator(".msg.metnos .text").last).to_contain_text("IDENTITY.md",
                                                                       timeout=60_000)
        browser.close()
    assert errors == []


def test_chat_says_how_to_start_when_metnos_is_not_running(
        instance_env: dict[str, str], compiled_catalog: Path) -> None:
    init_home(instance_env, compiled_catalog)
    chat = subprocess.run([*METNOS, "chat", "ciao"], env=instance_env, capture_output=True,
                          text=True, timeout=60)
    assert chat.returncode == 1
    assert "make run" in chat.stderr and "metnos serve" in chat.stderr


def test_serve_refuses_a_taken_port(instance_env: dict[str, str],
                                    compiled_catalog: Path) -> None:
    init_home(instance_env, compiled_catalog)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", int(instance_env["METNOS_GATEWAY_PORT"])))
        taken.listen(1)
        serve = subprocess.run([*METNOS, "serve"], env={**instance_env, "METNOS_LANG": "en"},
                               capture_output=True, text=True, timeout=120)
    assert serve.returncode == 1
    assert f"port {instance_env['METNOS_GATEWAY_PORT']} is already in use" in serve.stderr


def test_serve_names_a_wrong_model_key_at_start(compiled_catalog: Path) -> None:
    """The model is checked once at start: a key its server refuses is said before the
    banner, as a configuration error with the setting to fix; Metnos starts anyway."""
    from metnos.ground import i18n
    from metnos.testing.llm_server import ScriptedLLM
    from tests.support.serve_process import served_instance

    with ScriptedLLM(api_key="sk-right") as llm, served_instance(
            compiled_catalog, METNOS_LANG="en", METNOS_LLM_MODEL="openai/scripted",
            METNOS_LLM_API_BASE=llm.api_base, METNOS_LLM_API_KEY="sk-wrong") as inst:
        said = inst.banner
        health = httpx.get(f"{inst.gateway}/healthz").json()
    assert i18n.get("MSG_SERVE_MODEL_PROBLEM", "en", line="").strip() in said, said
    assert "configuration error" in said and "[llm] api_key" in said
    assert i18n.get("MSG_MODEL_FIX_API_KEY", "en") in said
    assert "sk-wrong" not in said
    assert health["model"] == "misconfigured" and health["status"] == "degraded"

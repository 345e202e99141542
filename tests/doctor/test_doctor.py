"""`metnos doctor` through the real command, on real instances (issue 26, Build point 4).

Each test makes a fresh `metnos init` home (`instance_env`) and runs `python -m
metnos.faces.cli.main doctor` as a person would. The problems are made for real: a socket of this
test on the gateway's port, a model server that wants another key (ScriptedLLM, the
third-party edge), the sandbox run where the kernel refuses user namespaces (an outer
bubblewrap with --disable-userns, as a container that forbids them does), an edited line of
the audit log, and processes recorded by a "crashed" instance.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from metnos.faces.serve import instance
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import audit_log_path, open_audit_log
from metnos.mechanisms.sandbox.bwrap import find_bwrap
from metnos.testing.llm_server import ScriptedLLM
from tests.support.pg import TestPostgres
from tests.support.serve_process import (
    METNOS,
    init_home,
    instance_env,
    served_instance,
    wait_ready,
)
from tests.support.tutor_catalog import install_catalog

SCREEN_LINES = 25


@pytest.fixture(scope="module")
def initialised(compiled_catalog: Path) -> Iterator[Path]:
    """One `metnos init` home for the module; each test gets its own copy of it."""
    root = Path(tempfile.mkdtemp(prefix="metnos-doctor-"))
    try:
        init_home(instance_env(root), compiled_catalog)
        yield root / "home"
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def env(initialised: Path) -> Iterator[dict[str, str]]:
    """A fresh, initialised instance's environment (English unless a test says otherwise)."""
    root = Path(tempfile.mkdtemp(prefix="metnos-doctor-"))
    try:
        shutil.copytree(initialised, root / "home", symlinks=True)
        yield instance_env(root, METNOS_LANG="en")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def doctor(env: dict[str, str], *args: str, wrap: list[str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*(wrap or []), *METNOS, "doctor", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def findings(env: dict[str, str], wrap: list[str] | None = None) -> dict[str, dict[str, Any]]:
    out = doctor(env, "--json", wrap=wrap)
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    assert data["ok"] == (out.returncode == 0)
    return {f["name"]: f for f in data["findings"]}


def settings_of(env: dict[str, str]) -> Settings:
    return Settings(home=Path(env["METNOS_HOME"]))


def test_a_healthy_instance_says_so_in_one_screen(env: dict[str, str]) -> None:
    out = doctor(env)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) <= SCREEN_LINES, out.stdout
    assert lines[-1].startswith("All is well"), out.stdout
    assert "✗" not in out.stdout
    assert f"Port {env['METNOS_GATEWAY_PORT']} (gateway): free." in out.stdout
    assert "Metnos is not running (start it with: metnos serve)." in out.stdout
    assert "The sandbox passed its safety check" in out.stdout
    assert "No language model is configured" in out.stdout
    assert "not tried against the server: it is not running" in out.stdout
    assert "The audit log is intact" in out.stdout


def test_json_gives_every_finding(env: dict[str, str]) -> None:
    found = findings(env)
    assert set(found) == {"port:gateway", "port:prefect-server", "port:postgres", "processes",
                          "sandbox", "model", "prefect-credential", "tutor", "disk", "audit",
                          "ocr"}
    assert found["processes"]["ok"] is None and found["sandbox"]["ok"] is True
    assert found["tutor"]["ok"] is True  # init's own compile: tests/tutor/test_first_turn.py
    readable = shutil.which("tesseract") is not None and all(
        list(Path("/usr/share/tesseract-ocr").glob(f"*/tessdata/{code}.traineddata"))
        for code in ("ita", "eng"))
    assert found["ocr"]["ok"] is (True if readable else None)
    assert (found["ocr"]["fix"] is None) is readable
    assert all(set(f) == {"name", "ok", "line", "fix"} for f in found.values())


def test_in_italian(env: dict[str, str]) -> None:
    out = doctor({**env, "METNOS_LANG": "it"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1].startswith("Va tutto bene"), out.stdout
    assert f"Porta {env['METNOS_GATEWAY_PORT']} (gateway): libera." in out.stdout
    assert "La sandbox ha superato il controllo di sicurezza" in out.stdout
    assert "Il registro di audit è integro" in out.stdout


def test_a_wrong_key_is_a_configuration_error_with_its_setting(env: dict[str, str]) -> None:
    with ScriptedLLM(api_key="the-right-key") as llm:
        found = findings({**env, "METNOS_LLM_MODEL": "openai/scripted",
                          "METNOS_LLM_API_BASE": llm.base_url + "/v1",
                          "METNOS_LLM_API_KEY": "a-wrong-key"})
    model = found["model"]
    assert model["ok"] is False
    assert "refused the API key" in model["line"] and "configuration error" in model["line"]
    assert "[llm] api_key" in model["fix"]
    assert all(f["ok"] is not False for n, f in found.items() if n != "model")


def test_the_right_key_passes(env: dict[str, str]) -> None:
    with ScriptedLLM(api_key="the-right-key") as llm:
        out = doctor({**env, "METNOS_LLM_MODEL": "openai/scripted",
                      "METNOS_LLM_API_BASE": llm.base_url + "/v1",
                      "METNOS_LLM_API_KEY": "the-right-key"})
    assert out.returncode == 0, out.stdout
    assert "The language model openai/scripted is answering." in out.stdout


def test_a_model_that_never_answers_does_not_hold_the_doctor(env: dict[str, str]) -> None:
    """A server that accepts the connection and says nothing: the model check is bounded, so
    the command ends (within the subprocess's 60 s, the issue's generous bound) and says so."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # never accepted: the kernel completes the handshake, nobody answers
        found = findings({**env, "METNOS_LLM_MODEL": "openai/scripted",
                          "METNOS_LLM_API_BASE": f"http://127.0.0.1:{silent.getsockname()[1]}/v1",
                          "METNOS_LLM_API_KEY": "k"})
    assert found["model"]["ok"] is not True
    assert found["sandbox"]["ok"] is True and found["audit"]["ok"] is True  # the rest ran


def test_a_port_taken_by_a_foreign_process_is_named(env: dict[str, str]) -> None:
    port = int(env["METNOS_GATEWAY_PORT"])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen(1)
        out = doctor(env)
    assert out.returncode == 1, out.stdout
    line = next(ln for ln in out.stdout.splitlines() if f"Port {port}" in ln)
    assert "✗" in line and "taken by another program" in line
    # this very test process, named by its program (a pytest-xdist worker's is `python -c …`)
    assert f"pid {os.getpid()}, " in line and "python" in line
    assert ("Stop that program, or give Metnos another port: [gateway] port in metnos.toml "
            "(or METNOS_GATEWAY_PORT).") in out.stdout
    assert out.stdout.splitlines()[-1] == "One problem: its fix is on the line with →."


def test_a_failing_sandbox_canary_is_named_with_its_fix(env: dict[str, str]) -> None:
    no_userns = [str(find_bwrap()), "--dev-bind", "/", "/", "--unshare-user",
                 "--disable-userns", "--"]
    found = findings(env, wrap=no_userns)
    sandbox = found["sandbox"]
    assert sandbox["ok"] is False
    assert sandbox["line"].startswith("The sandbox cannot start")
    assert "bwrap: " in sandbox["line"]  # what bubblewrap itself said
    assert "user namespaces" in sandbox["fix"] and "restart metnos serve" in sandbox["fix"]


def test_a_broken_audit_chain_is_named(env: dict[str, str]) -> None:
    settings = settings_of(env)
    with open_audit_log(settings) as audit:
        for i in range(4):
            audit.append(action="fs_read", decision="allow", sender="owner", outcome=f"ok{i}")
    assert findings(env)["audit"]["ok"] is True
    path = audit_log_path(settings)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1] = lines[1].replace("ok1", "ok7")
    path.write_text("".join(lines), encoding="utf-8")
    out = doctor(env)
    assert out.returncode == 1
    assert "✗ Line 2 of the audit log was modified" in out.stdout
    assert f"keep a copy of {path}" in out.stdout


def test_leftovers_of_a_crash_are_named_with_the_way_out(env: dict[str, str]) -> None:
    """A supervisor that is gone and a recorded child still holding the gateway's port:
    the records `metnos serve` writes, of real processes."""
    settings = settings_of(env)
    port = int(env["METNOS_GATEWAY_PORT"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    supervisor = instance.ProcessRecord.of(instance.SUPERVISOR, gone.pid)
    gone.wait()
    child = subprocess.Popen([sys.executable, "-c", LISTEN, str(port)], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline()  # listening
        instance.write_records(settings, [supervisor, instance.ProcessRecord.of("gateway",
                                                                                child.pid)])
        out = doctor(env)
    finally:
        child.kill()
        child.wait()
    assert out.returncode == 1, out.stdout
    assert (f"Port {port} (gateway) is held by a leftover of this Metnos (pid {child.pid})"
            in out.stdout)
    assert f"Leftovers of a crash are still running without their supervisor: gateway " \
           f"({child.pid})." in out.stdout
    assert "Run: metnos serve (it stops the leftovers first, then starts)." in out.stdout


def test_a_hostile_command_line_cannot_act_on_the_terminal(env: dict[str, str]) -> None:
    port = int(env["METNOS_GATEWAY_PORT"])
    hostile = "\x1b]0;owned\x07\x1b[2J\u202eevil"
    child = subprocess.Popen([hostile, "-c", LISTEN, str(port)], executable=sys.executable,
                             stdout=subprocess.PIPE)  # the hostile text as its argv[0]
    try:
        assert child.stdout is not None and child.stdout.readline()
        out = doctor(env)
    finally:
        child.kill()
        child.wait()
    line = next(ln for ln in out.stdout.splitlines() if f"Port {port}" in ln)
    assert f"pid {child.pid}, " in line and "evil" in line
    assert not any(c in out.stdout for c in ("\x1b", "\x07", "\u202e"))


def test_the_tutor_catalog_verified_then_refused(env: dict[str, str],
                                                 compiled_catalog: Path) -> None:
    home = Path(env["METNOS_HOME"])
    install_catalog(compiled_catalog, home)
    tutor = findings(env)["tutor"]
    assert tutor["ok"] is True and tutor["line"].startswith("The Tutor's catalog is verified")
    with sqlite3.connect(home / "tutor" / "catalog.sqlite") as db:
        db.execute("UPDATE sections SET text = text || '!' WHERE rowid = 1")
    tutor = findings(env)["tutor"]
    assert tutor["ok"] is False and "refused" in tutor["line"]
    assert tutor["fix"] == "Run: metnos tutor compile"


def test_what_undo_keeps_is_counted_and_a_readable_password_named(env: dict[str, str]) -> None:
    settings = settings_of(env)
    (settings.workspace / ".trash" / "a1").mkdir(parents=True)
    (settings.workspace / ".trash" / "a1" / "old.bin").write_bytes(os.urandom(300_000))
    (settings.state_dir / "before" / "a2").mkdir(parents=True)
    (settings.state_dir / "before" / "a2" / "copy.bin").write_bytes(os.urandom(2_000_000))
    credential = settings.secrets_dir / "prefect.auth"
    credential.chmod(0o644)
    found = findings(env)
    assert found["disk"]["ok"] is True
    assert re.match(r"Trash 3\d\d\.\d kB, before-records 2\.\d MB; [\d.]+ [GMT]B free",
                    found["disk"]["line"]), found["disk"]["line"]
    assert found["prefect-credential"]["ok"] is False
    assert "can be read by other users (mode 0o644)" in found["prefect-credential"]["line"]
    assert found["prefect-credential"]["fix"] == f"Run: chmod 600 {credential}"


LISTEN = ("import socket, sys, time\ns = socket.socket()\n"
          "s.bind(('127.0.0.1', int(sys.argv[1])))\ns.listen(1)\nprint('up', flush=True)\n"
          "time.sleep(120)\n")


@pytest.mark.timeout(600)
def test_a_running_instance_is_healthy_and_its_prefect_password_works(
        compiled_catalog: Path) -> None:
    with served_instance(compiled_catalog, METNOS_LANG="en") as served:
        out = doctor(served.env)
        assert out.returncode == 0, out.stdout + out.stderr
        assert len(out.stdout.splitlines()) <= SCREEN_LINES
        assert "Metnos is running: supervisor (" in out.stdout and "gateway (" in out.stdout
        assert (f"Port {served.env['METNOS_GATEWAY_PORT']} (gateway): used by this Metnos"
                in out.stdout)
        assert ("The Prefect server accepts this instance's password and refuses anyone "
                "without it.") in out.stdout
        assert ("✓ The gateway answers: its sandbox, database, Prefect server and runner are "
                "fine.") in out.stdout
        assert out.stdout.splitlines()[-1].startswith("All is well")


@pytest.mark.timeout(600)
def test_a_gateway_running_without_its_sandbox_is_named(pg_server: TestPostgres,
                                                        prefect_api: str,
                                                        compiled_catalog: Path) -> None:
    """`metnos serve` started where user namespaces are refused (an outer bubblewrap with
    --disable-userns; the session's PostgreSQL and Prefect, since an embedded PostgreSQL
    cannot change user there): its gateway runs with a failed canary. The doctor, outside,
    finds the sandbox working now and says the gateway still runs without it, and the fix."""
    root = Path(tempfile.mkdtemp(prefix="metnos-doctor-"))
    env = instance_env(root, METNOS_LANG="en", PREFECT_API_URL=prefect_api,
                       METNOS_DATABASE_URL=pg_server.url(pg_server.fresh_database()),
                       PREFECT_SERVER_DATABASE_CONNECTION_URL=pg_server.url(
                           pg_server.fresh_database(), driver="asyncpg"))  # no embedded PG
    if os.environ.get("PREFECT_API_AUTH_STRING"):
        env["PREFECT_API_AUTH_STRING"] = os.environ["PREFECT_API_AUTH_STRING"]
    no_userns = [str(find_bwrap()), "--dev-bind", "/", "/", "--unshare-user",
                 "--disable-userns", "--"]
    proc: subprocess.Popen[str] | None = None
    try:
        init_home(env, compiled_catalog)
        proc = subprocess.Popen([*no_userns, *METNOS, "serve"], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        wait_ready(proc)
        out = doctor(env)
    finally:
        if proc is not None:
            _stop_served(proc, env)
        shutil.rmtree(root, ignore_errors=True)
    assert out.returncode == 1, out.stdout
    assert "✓ The sandbox passed its safety check" in out.stdout, out.stdout  # the doctor's
    # (the session's Prefect server may hold other tests' deployments, whose runners are
    # gone: a second problem may follow the sandbox's on the same line)
    assert ("✗ The gateway answers, but: its sandbox failed the check at its start, so only "
            "the tools that change nothing run") in out.stdout, out.stdout
    assert "then restart metnos serve: the gateway checks the sandbox only when it starts" \
        in out.stdout


def _stop_served(proc: subprocess.Popen[str], env: dict[str, str]) -> None:
    """SIGTERM to the supervisor this test started (bubblewrap does not pass signals on)."""
    settings = Settings(home=Path(env["METNOS_HOME"]))
    for record in instance.running(settings):
        if record.name == instance.SUPERVISOR:
            os.kill(record.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

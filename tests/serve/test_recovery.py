"""A crash is not the end (issue 26): `metnos serve` as real processes, killed with SIGKILL.

- kill -9 of the supervisor: its children do not run on unsupervised (the parent-death signal;
  the watchdog stops PostgreSQL), and the next `metnos serve` is healthy within 30 s with one
  copy of each process; with leftovers that could not stop by themselves (frozen), the next
  `metnos serve` stops them and says so.
- kill -9 of each child (the gateway, with its runner; the Prefect server, PostgreSQL's
  postmaster, the watchdog):
  the supervisor brings it back healthy within 30 s without any command, and the owner gets a
  notice.
- A second `metnos serve` on a running home is refused, naming the running supervisor's pid;
  a foreign process on one of the instance's ports is named by pid and command.

Only processes these tests started are signalled.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from metnos.faces.serve.instance import ProcessRecord
from tests.support.serve_process import (
    METNOS,
    ServedInstance,
    init_home,
    instance_env,
    served_instance,
    stop_postgres,
    wait_ready,
)

ROLES = {  # a process's role, from marks its command line holds
    "supervisor": ("metnos.faces.cli.main", "serve"),
    "watchdog": ("metnos.faces.serve.watchdog",),
    "prefect-server": ("deployments.prefect_server",),
    "gateway": ("flows.gateway",),
}
EVERY = {"supervisor", "watchdog", "postgres", "prefect-server", "gateway"}
BACK_WITHIN_S = 30.0  # the acceptance bound


def records(home: Path) -> dict[str, ProcessRecord]:
    path = home / "run" / "processes.json"
    raw = json.loads(path.read_text()) if path.exists() else []
    return {r["name"]: ProcessRecord(r["name"], r["pid"], r["create_time"], tuple(r["argv"]))
            for r in raw}


def role(argv: list[str]) -> str | None:
    if argv and os.path.basename(argv[0]) == "postgres" and "-D" in argv:
        return "postgres"  # the postmaster (its backends rename themselves)
    return next((name for name, marks in ROLES.items() if all(m in argv for m in marks)), None)


def processes_of(home: Path) -> dict[str, list[int]]:
    """The processes whose command line or environment names this METNOS_HOME, by role."""
    found: dict[str, list[int]] = {}
    for proc in psutil.process_iter(["cmdline"]):
        try:
            argv = proc.info["cmdline"] or []
            if str(home) not in " ".join(argv) and not any(
                    str(home) in value for value in proc.environ().values()):
                continue
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        name = role(argv)
        if name is not None:
            found.setdefault(name, []).append(proc.pid)
    return found


def one_of_each(home: Path) -> str | None:
    """None when exactly one process of each role runs and the records name them; else
    what differs."""
    found = processes_of(home)
    counts = Counter({name: len(pids) for name, pids in found.items()})
    if counts != Counter(dict.fromkeys(EVERY, 1)):
        return f"running: {found}"
    recs = records(home)
    if {name: [rec.pid] for name, rec in recs.items()} != found:
        return f"running: {found}, recorded: {recs}"
    if not all(rec.alive() for rec in recs.values()):
        return f"recorded, not alive: {recs}"
    return None


def assert_one_of_each(home: Path, within_s: float = BACK_WITHIN_S) -> None:
    """One of each, at once or within `within_s` (a part that died with the one killed is
    being restarted meanwhile)."""
    deadline = time.monotonic() + within_s
    while (differs := one_of_each(home)) is not None:
        assert time.monotonic() < deadline, differs
        time.sleep(0.5)


def healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def owner_notices(served: ServedInstance) -> list[str]:
    try:
        found = httpx.get(f"{served.gateway}/api/notices", params={"channel": "cli"},
                          headers=served.owner_headers(), timeout=10)
    except httpx.HTTPError:
        return []
    if found.status_code != 200:  # its database was restarted a moment ago
        return []
    return [n["text"] for n in found.json()["notices"] if n["kind"] == "service"]


def serve(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([*METNOS, "serve"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def stop(proc: subprocess.Popen[str], env: dict[str, str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stop_postgres(env)


HUNG_AFTER_S = 10  # this module's instance calls a child hung after this long


@pytest.fixture(scope="module")
def served(compiled_catalog: Path) -> Iterator[ServedInstance]:
    with served_instance(compiled_catalog, METNOS_LANG="en",
                         METNOS_GATEWAY_HUNG_AFTER_S=str(HUNG_AFTER_S)) as inst:
        yield inst


PARTS = {"gateway": "its web and chat service (with reminders and scheduled tasks)",
         "prefect-server": "keeps track of its tasks", "postgres": "its database",
         "watchdog": "shuts its database down safely"}


@pytest.mark.parametrize("name", ["gateway", "prefect-server", "postgres", "watchdog"])
def test_a_killed_child_comes_back_by_itself_and_the_owner_is_told(
        served: ServedInstance, name: str) -> None:
    before = records(served.home)[name]
    assert before.alive()
    os.kill(before.pid, signal.SIGKILL)
    killed = time.monotonic()
    while time.monotonic() - killed < BACK_WITHIN_S:
        now = records(served.home).get(name)
        if now is not None and now.pid != before.pid and now.alive() and (
                name != "prefect-server" or healthy(f"{served.prefect}/api/health")) and \
                healthy(f"{served.gateway}/healthz"):
            break
        time.sleep(0.25)
    else:
        pytest.fail(f"{name} not back within {BACK_WITHIN_S} s: {records(served.home)}")
    assert served.process.poll() is None  # the supervisor ran on
    deadline = time.monotonic() + 15  # the notice is written once it is healthy
    while not any(PARTS[name] in text for text in owner_notices(served)):
        assert time.monotonic() < deadline, owner_notices(served)
        time.sleep(0.5)
    assert_one_of_each(served.home)


def test_a_frozen_gateway_is_restarted_by_itself(served: ServedInstance) -> None:
    """A gateway that answers nothing (stopped with SIGSTOP: alive, deaf) is killed once it
    stayed silent `hung_after_s`, and comes back like one that died, the owner told."""
    before = records(served.home)["gateway"]
    told = len([t for t in owner_notices(served) if PARTS["gateway"] in t])
    os.kill(before.pid, signal.SIGSTOP)
    frozen = time.monotonic()
    within = HUNG_AFTER_S + 5 + BACK_WITHIN_S  # silent long enough, seen, then restarted
    while time.monotonic() - frozen < within:
        now = records(served.home).get("gateway")
        if now is not None and now.pid != before.pid and now.alive() and healthy(
                f"{served.gateway}/healthz"):
            break
        time.sleep(0.5)
    else:
        os.kill(before.pid, signal.SIGCONT)
        pytest.fail(f"the frozen gateway was not replaced within {within} s")
    assert not before.alive() and served.process.poll() is None
    deadline = time.monotonic() + 15
    while len([t for t in owner_notices(served) if PARTS["gateway"] in t]) <= told:
        assert time.monotonic() < deadline, owner_notices(served)
        time.sleep(0.5)
    assert_one_of_each(served.home)


def test_a_second_serve_on_a_running_home_is_refused_naming_its_pid(
        served: ServedInstance) -> None:
    second = subprocess.run([*METNOS, "serve"], env=served.env, capture_output=True,
                            text=True, timeout=60)
    assert second.returncode == 1
    assert f"pid {served.process.pid}" in second.stderr and "already running" in second.stderr
    assert "port" not in second.stderr
    assert_one_of_each(served.home)


def test_kill_9_of_the_supervisor_then_serve_is_healthy_with_one_of_each(
        compiled_catalog: Path) -> None:
    with served_instance(compiled_catalog, METNOS_LANG="en") as first:
        home, env = first.home, first.env
        assert_one_of_each(home)
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait()
        # nothing runs on unsupervised: the children got SIGTERM, the watchdog stopped the db
        deadline = time.monotonic() + 60
        while processes_of(home):
            assert time.monotonic() < deadline, processes_of(home)
            time.sleep(0.5)
        again = serve(env)
        try:
            t0 = time.monotonic()
            wait_ready(again, timeout_s=120)
            assert time.monotonic() - t0 < BACK_WITHIN_S
            assert healthy(f"{first.gateway}/healthz")
            assert_one_of_each(home)

            # leftovers that cannot stop by themselves (frozen: deaf to the parent-death
            # signal) and a database nobody stops: the next serve stops them, and says so
            recs = records(home)
            frozen = [recs[n] for n in ("watchdog", "gateway", "prefect-server")]
            for rec in frozen:
                os.kill(rec.pid, signal.SIGSTOP)
            os.kill(again.pid, signal.SIGKILL)
            again.wait()
            path = home / "run" / "processes.json"  # the postmaster found without its record
            path.write_text(json.dumps([r for r in json.loads(path.read_text())
                                        if r["name"] != "postgres"]))
            third = serve(env)
            try:
                t0 = time.monotonic()
                banner = wait_ready(third, timeout_s=120)
                took = time.monotonic() - t0
                assert "had not stopped cleanly" in banner
                for name in ("watchdog", "gateway", "prefect-server", "postgres"):
                    assert name in banner
                assert not any(rec.alive() for rec in frozen)
                assert healthy(f"{first.gateway}/healthz")
                assert_one_of_each(home)
                assert took < BACK_WITHIN_S + 10, took  # plus the leftovers' grace
            finally:
                stop(third, env)
        finally:
            stop(again, env)


@pytest.fixture(scope="module")
def set_up_home(compiled_catalog: Path) -> Iterator[dict[str, str]]:
    """A home after `metnos init`, not running."""
    root = Path(tempfile.mkdtemp(prefix="metnos-ports-"))
    env = instance_env(root, METNOS_LANG="en")
    try:
        init_home(env, compiled_catalog)
        yield env
    finally:
        stop_postgres(env)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("port_var", ["METNOS_GATEWAY_PORT", "METNOS_PREFECT_PORT",
                                      "METNOS_DATABASE_PORT"])
def test_a_foreign_process_on_a_port_is_named(set_up_home: dict[str, str],
                                              port_var: str) -> None:
    env, port = set_up_home, set_up_home[port_var]
    foreign = subprocess.Popen([sys.executable, "-m", "http.server", port, "--bind",
                                "127.0.0.1"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not healthy(f"http://127.0.0.1:{port}/"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        refused = subprocess.run([*METNOS, "serve"], env=env, capture_output=True, text=True,
                                 timeout=120)
    finally:
        foreign.terminate()
        foreign.wait(timeout=10)
    assert refused.returncode == 1
    assert f"port {port} is already in use by another program" in refused.stderr
    assert f"pid {foreign.pid}" in refused.stderr and "http.server" in refused.stderr
    assert processes_of(Path(env["METNOS_HOME"])) == {}  # nothing was started, nor left


class Said:
    """What `metnos serve` prints from now on."""

    def __init__(self, served: ServedInstance) -> None:
        assert served.output is not None
        self.output = served.output
        self.seen = served.output.mark()

    def next(self, needle: str, within_s: float = BACK_WITHIN_S) -> str:
        """The next line that holds `needle` (waits for it)."""
        self.seen, line = self.output.wait_for(needle, self.seen, within_s)
        return line


def test_a_child_that_dies_again_waits_longer_before_its_restart(
        served: ServedInstance) -> None:
    assert_one_of_each(served.home)
    said = Said(served)
    delays = []
    for _ in range(2):
        gateway = records(served.home)["gateway"]
        os.kill(gateway.pid, signal.SIGKILL)
        line = said.next("The gateway service stopped unexpectedly")
        delays.append(int(line.rsplit("restarting it in ", 1)[1].split(" ")[0]))
        said.next("The gateway service is running again", within_s=120)
    assert delays[1] == 2 * delays[0], delays  # 1, 2, 4... s
    assert_one_of_each(served.home)

"""Law 1 under kill -9: the real gateway process is killed at each dangerous moment of a
mutating turn, restarted, and what it left is checked (issue 10 §2).

The gateway is `python -m flows.gateway` (the Prefect turn flow, the real bubblewrap sandbox)
on the session's PostgreSQL and Prefect server. The executor is `slow_write`, signed by the
test into METNOS_HOME/executors: it writes the user's file in place, pausing before it starts
and half-way, so the test can stop the gateway exactly where it wants with plain process
control (no fault hook in production code):

- (a) SIGKILL once the executor is in the sandbox, before it writes: the before-record is
  complete, nothing written;
- (b) SIGKILL once the file holds half the new bytes: the executor is killed with its parent
  (bwrap `--die-with-parent`), the file is torn;
- (c) SIGSTOP once the executor has its arguments, let it finish, then SIGKILL: the file
  is changed and no audit line says so;
- (d) SIGKILL while the turn waits for the owner's approval.

After each restart: `metnos audit verify` passes; the file is unchanged, or changed and
`metnos undo` makes it byte-identical; the turn is `failed` with a reply saying why (never
`running`) and its Prefect flow run Crashed (never Running or Paused); every before-record
verifies, and no partial record or temporary file is left.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import psutil
import pytest
from prefect import get_client
from prefect.client.schemas.objects import StateType

from metnos.ground import durable, i18n, keys, reversibility
from metnos.mechanisms.executors.signing import sign_executor, signature_path
from metnos.mechanisms.undo import verify_before
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from tests.support.gateway_process import GatewayProcess
from tests.support.home import MakeHome
from tests.support.pg import free_port

METNOS = [sys.executable, "-m", "metnos.faces.cli.main"]
EXECUTOR = Path(__file__).parent / "slow_write"
ORIGINAL = "".join(f"line {i}: the owner's own words\n" for i in range(400))
NEW = "".join(f"line {i}: what the model wrote\n" for i in range(400))
HALF = NEW.encode()[: len(NEW.encode()) // 2]
FILE = "notes.txt"
MATRIX: list[tuple[str, ...]] = []
# the numbers of nanosleep and clock_nanosleep, for when /proc/<pid>/wchan is hidden
NANOSLEEP_CALLS = {"x86_64": {"35", "230"}, "aarch64": {"101", "115"}}.get(
    platform.machine(), set())
HEADER = ("case", "file after kill", "undo", "audit verify", "turn status", "prefect run")


@pytest.fixture(scope="module", autouse=True)
def printed_matrix(request: pytest.FixtureRequest) -> Iterator[None]:
    """The matrix, printed to the terminal whatever pytest captures."""
    yield
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is None or capture is None or not MATRIX:
        return
    rows = [HEADER, *sorted(MATRIX)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    with capture.global_and_fixture_disabled():  # fd capture would swallow it otherwise
        reporter.write_line("")
        reporter.write_line("kill -9 matrix (issue 10 §2):")
        for row in rows:
            reporter.write_line("  " + " | ".join(c.ljust(w) for c, w in zip(row, widths,
                                                                             strict=True)))


@dataclass
class Gateway(GatewayProcess):
    orphans: tuple[psutil.Process, ...] = ()  # its sandbox processes when it was killed

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, self.base + path, headers=self.home.auth(), timeout=60,
                             **kwargs)

    def sandboxes(self) -> list[psutil.Process]:
        assert self.proc is not None
        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        return [p for p in children if _is_bwrap(p)]

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        assert self.proc is not None
        if sig == signal.SIGKILL:
            self.orphans = tuple(psutil.Process(self.proc.pid).children(recursive=True))
        os.kill(self.proc.pid, sig)
        if sig == signal.SIGKILL:
            self.proc.wait(30)

    def executor_pausing(self) -> bool:
        """The executor read its arguments (stdin) and sleeps before writing."""
        for sandbox in self.sandboxes():
            try:
                inside = sandbox.children(recursive=True)
            except psutil.Error:
                continue
            if any("main.py" in " ".join(_cmdline(p)) and _in_sleep(p.pid) for p in inside):
                return True
        return False

    def orphans_alive(self) -> list[psutil.Process]:
        return [p for p in self.orphans if _alive(p)]

    def wait(self, what: str, check: Callable[[], bool], timeout_s: float = 90) -> None:
        """Poll `check`; on a timeout, fail with what the gateway logged and what it left."""
        deadline = time.monotonic() + timeout_s
        while not check():
            if time.monotonic() > deadline:
                left = [" ".join(_cmdline(p)) for p in self.orphans_alive()]
                raise AssertionError(f"timed out waiting for {what}; still running: {left}\n"
                                     + self.log.read_text(errors="replace")[-4000:])
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)


def _is_bwrap(proc: psutil.Process) -> bool:
    try:
        return bool(proc.name() == "bwrap" and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return list(proc.cmdline())
    except psutil.Error:
        return []


def _in_sleep(pid: int) -> bool:
    """In nanosleep (not blocked reading its stdin): from the kernel's wait channel, else
    the number of the system call it is in."""
    try:
        if "nanosleep" in Path(f"/proc/{pid}/wchan").read_text():
            return True
        return Path(f"/proc/{pid}/syscall").read_text().split()[0] in NANOSLEEP_CALLS
    except (OSError, IndexError):
        return False


def _alive(proc: psutil.Process) -> bool:
    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*METNOS, *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def gateway(make_home: MakeHome, scripted_llm: ScriptedLLM,
            tmp_path: Path) -> Iterator[Callable[[str], Gateway]]:
    made: list[Gateway] = []

    def make(autonomy: str) -> Gateway:
        home = make_home(llm=scripted_llm, autonomy=autonomy, lang="en",
                         METNOS_GATEWAY_PORT=str(free_port()))
        folder = home.path / "executors" / "slow_write"
        folder.mkdir()
        for name in ("manifest.toml", "main.py"):
            (folder / name).write_bytes((EXECUTOR / name).read_bytes())
        sign_executor(folder, keys.load_private_key(home.settings.keys_dir, "executors"),
                      signature_path(home.path / "signatures", "slow_write"))
        (home.workspace / FILE).write_text(ORIGINAL)
        gw = Gateway(home, dict(os.environ), tmp_path / "gateway.log")
        made.append(gw)
        return gw

    yield make
    for gw in made:
        gw.stop()


def start_turn(gw: Gateway, scripted_llm: ScriptedLLM, pause_before: float = 0,
               pause_middle: float = 0) -> str:
    scripted_llm.always(ToolCall("slow_write", {"path": FILE, "content": NEW,
                                                "pause_before": pause_before,
                                                "pause_middle": pause_middle}))
    reply = gw.call("POST", "/api/turns?wait=false", json={"text": "rewrite my notes",
                                                             "lang": "en"})
    assert reply.status_code == 200, reply.text
    return str(reply.json()["turn_id"])


def file_bytes(gw: Gateway) -> bytes:
    return (gw.home.workspace / FILE).read_bytes()


def records(gw: Gateway) -> list[str]:
    before = gw.home.settings.state_dir / "before"
    return sorted(os.listdir(before)) if before.is_dir() else []


def kill_at_executor_start(gw: Gateway, scripted_llm: ScriptedLLM) -> str:
    turn_id = start_turn(gw, scripted_llm, pause_before=120)
    # not the instant bwrap appears: a parent killed before bwrap arms --die-with-parent
    # (early in its start) leaves the sandbox running on its own
    gw.wait("the executor to have its arguments", lambda: gw.executor_pausing())
    gw.kill()
    return turn_id


def kill_while_writing(gw: Gateway, scripted_llm: ScriptedLLM) -> str:
    turn_id = start_turn(gw, scripted_llm, pause_middle=120)
    gw.wait("half the new bytes", lambda: file_bytes(gw) == HALF)
    gw.kill()
    return turn_id


def kill_before_the_audit_line(gw: Gateway, scripted_llm: ScriptedLLM) -> str:
    turn_id = start_turn(gw, scripted_llm, pause_before=5)
    gw.wait("the executor to have its arguments", lambda: gw.executor_pausing())
    gw.kill(signal.SIGSTOP)  # frozen: it cannot read the result nor write the audit line
    gw.wait("the executor's whole write", lambda: file_bytes(gw) == NEW.encode())
    gw.wait("the sandbox to exit", lambda: not gw.sandboxes())
    gw.kill()
    lines = [r for r in gw.home.settings.audit_dir.joinpath("audit.jsonl").read_text()
             .splitlines() if '"slow_write"' in r and '"done"' in r]
    assert lines == []  # truly between the executor's effect and its audit line
    return turn_id


def kill_while_waiting_for_approval(gw: Gateway, scripted_llm: ScriptedLLM) -> str:
    turn_id = start_turn(gw, scripted_llm)
    gw.wait("the approval", lambda: gw.call("GET", f"/api/turns/{turn_id}").json()["status"]
             == "awaiting_approval")
    gw.kill()
    return turn_id


CASES = {
    "a: after the before-record": ("Full", kill_at_executor_start, "unchanged"),
    "b: while the executor runs": ("Full", kill_while_writing, "torn"),
    "c: after the executor, before the audit line": ("Full", kill_before_the_audit_line,
                                                     "changed"),
    "d: while an approval waits": ("Supervised", kill_while_waiting_for_approval, "unchanged"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_kill_9_loses_nothing(case: str, gateway: Callable[[str], Gateway],
                              scripted_llm: ScriptedLLM) -> None:
    autonomy, kill, expected = CASES[case]
    gw = gateway(autonomy)
    gw.start()
    turn_id = kill(gw, scripted_llm)
    after_kill = file_bytes(gw)
    state = ("unchanged" if after_kill == ORIGINAL.encode() else
             "changed" if after_kill == NEW.encode() else "torn")
    assert state == expected
    gw.wait("the sandbox to die with the gateway", lambda: not gw.orphans_alive())
    assert file_bytes(gw) == after_kill  # nothing went on writing after the kill

    gw.start()  # the restart sweeps what the dead process left
    turn = gw.call("GET", f"/api/turns/{turn_id}").json()
    assert turn["status"] == "failed", turn
    ids = records(gw)
    undo = check_undo(gw, ids, turn["reply"], expected == "unchanged" and autonomy == "Full")
    verify = cli(gw.env, "audit", "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert file_bytes(gw) == ORIGINAL.encode()
    assert_nothing_half_written(gw)
    assert_audited(gw, turn_id, ids, autonomy)
    for approval in turn["approvals"]:  # expired by the restart: approving it now runs nothing
        assert approval["status"] == "expired", approval
        late = gw.call("POST", f"/api/approvals/{approval['approval_id']}",
                       json={"decision": "approve"})
        assert late.status_code in (409, 410) and records(gw) == [], late.text
        assert file_bytes(gw) == ORIGINAL.encode()
    assert (autonomy == "Supervised") == bool(turn["approvals"])
    MATRIX.append((case, state, undo, "ok", turn["status"], prefect_state(turn["flow_run_id"])))


def prefect_state(flow_run_id: str | None) -> str:
    """The turn's flow run as the Prefect server tells it: ended, never Running or Paused."""
    assert flow_run_id, "the turn's flow run was not recorded"
    with get_client(sync_client=True) as client:
        state = client.read_flow_run(UUID(flow_run_id)).state
    assert state is not None and state.type == StateType.CRASHED, state
    return str(state.type.value).lower()


def check_undo(gw: Gateway, ids: list[str], reply: str, idle: bool) -> str:
    """The interrupted action can be undone by the id its turn's reply names; "-" when the
    turn never got as far as an action (no before-record at all)."""
    public = keys.load_public_key(gw.home.settings.keys_dir, "audit")
    for action_id in ids:
        verify_before(gw.home.settings.state_dir, action_id, public)  # whole and signed
    if not ids:
        assert i18n.get("ERR_APPROVAL_INTERRUPTED", "en", executor="slow_write") == reply
        return "- (nothing ran)"
    [action_id] = ids
    assert reply.startswith(i18n.get("ERR_TURN_INTERRUPTED", "en")), reply
    assert f"metnos undo {action_id}" in reply
    done = cli(gw.env, "undo", action_id, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return "ok (no-op)" if idle else "ok, byte-identical"


def assert_nothing_half_written(gw: Gateway) -> None:
    left = [str(p.relative_to(gw.home.path)) for p in gw.home.path.rglob("*")
            if durable.is_temporary(p.name) or p.name.startswith(
                (reversibility.PARTIAL_PREFIX, ".metnos-undo-"))]
    assert left == []


def assert_audited(gw: Gateway, turn_id: str, ids: list[str], autonomy: str) -> None:
    lines = [r for r in gw.call("GET", "/api/audit?limit=200").json()
             if r.get("turn_id") == turn_id]
    reasons = [(r["action"], r["reason"], r["outcome"]) for r in lines]
    if autonomy == "Supervised":
        assert ("slow_write", "ERR_APPROVAL_INTERRUPTED", "expired") in reasons
    else:
        assert ("slow_write", "ERR_TURN_INTERRUPTED", "interrupted") in reasons
        assert ("turn", "ERR_TURN_INTERRUPTED", "failed") in reasons
        assert [r["action_id"] for r in lines if r["outcome"] == "interrupted"] == ids


"""A stop under load loses no work (issue 26 §3): SIGTERM to the real gateway process.

The gateway is `python -m flows.gateway` (turns as in-process Prefect flows) on the session's
PostgreSQL and Prefect server, with `[gateway] drain_s` = 5. The model is the scripted
server answering after a pause, so turns are in flight when the signal comes; one message
("saga") makes it answer only after the drain window, so its turn is interrupted.

What must hold: the process exits within the window plus a few seconds (no Prefect flow
running in-process swallows SIGTERM); every turn answered 200 completed or says it was
interrupted, in the answer and in the database; every other request made while the process
lived got 503 with a plain message and `Retry-After` (a refused connection only once the
window was over and the server closed); no turn row without an answer; `/healthz` says
`draining` (503) during the drain; the interrupted turn's Prefect run is over.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import httpx
import pytest
from prefect import get_client
from prefect.client.schemas.objects import StateType
from sqlmodel import select

from metnos.ground.db import models
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.testing.llm_server import ScriptedLLM
from tests.support.gateway_process import GatewayProcess
from tests.support.home import Home, MakeHome
from tests.support.pg import free_port
from tests.support.turn_load import (
    Sent,
    check_answers,
    client_loop,
    interrupted,
    send,
    slow_model,
    watch_health,
)

DRAIN_S = 5.0
GRACE_S = 10.0  # "a few seconds" past the window: Prefect told, the server closed
ANSWER_S = 1.5  # the model's pause for an ordinary message
SAGA_S = 40.0  # and for the one that outlasts the window
LONG_WINDOW_S = 60.0  # a window the second signal must not wait for


@dataclass
class Gateway(GatewayProcess):
    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def logged(self) -> str:
        return self.log.read_text(errors="replace")[-5000:]

    def terminate(self, why: str) -> float:
        """SIGTERM, then wait for the exit within the drain window and its grace (the
        test fails with `why` and the log otherwise); when the signal was sent."""
        assert self.proc is not None
        signalled = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(DRAIN_S + GRACE_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{why}\n" + self.logged())
        return signalled


@pytest.fixture
def gateway(make_home: MakeHome, scripted_llm: ScriptedLLM, tmp_path: Path,
            request: pytest.FixtureRequest) -> Iterator[Gateway]:
    drain_s = getattr(request, "param", DRAIN_S)  # the window, DRAIN_S unless parametrized
    home = make_home(llm=scripted_llm, autonomy="Full", lang="en",
                     METNOS_GATEWAY_PORT=str(free_port()), METNOS_GATEWAY_DRAIN_S=str(drain_s))

    scripted_llm.respond_with(slow_model(ANSWER_S, SAGA_S))
    gw = Gateway(home, dict(os.environ), tmp_path / "gateway.log")
    yield gw
    gw.stop()


def wait_for(what: str, check: Callable[[], bool], gw: Gateway, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{gw.logged()}"
        time.sleep(0.05)


def turns_in_db(home: Home) -> list[models.Turn]:
    engine = make_engine(database_url(home.settings))
    try:
        with db_session(engine) as db:
            found = list(db.exec(select(models.Turn)).all())
            for turn in found:
                db.expunge(turn)
            return found
    finally:
        engine.dispose()


def run_state(flow_run_id: str | None) -> StateType | None:
    assert flow_run_id, "the turn's flow run was not recorded"
    with get_client(sync_client=True) as client:
        state = client.read_flow_run(UUID(flow_run_id)).state
    return None if state is None else state.type


def test_sigterm_with_5_sessions_sending_turns_loses_nothing(gateway: Gateway) -> None:
    gw = gateway
    gw.start()
    assert gw.proc is not None
    stop = threading.Event()
    sent: list[list[Sent]] = [[] for _ in range(5)]
    health: list[tuple[int, str]] = []
    saga: list[Sent] = []
    # the turn that outlasts the window, in a sixth session of its own
    proc = gw.proc
    base, headers, gone = gw.base, gw.home.auth(), lambda: proc.poll() is not None
    threads = [threading.Thread(target=lambda: saga.append(
        send(base, headers, "tell me the whole saga of the family", None)))]
    threads += [threading.Thread(target=client_loop, args=(base, headers, n, sent[n], stop, gone))
                for n in range(5)]
    threads.append(threading.Thread(target=watch_health, args=(base, health, stop)))
    for thread in threads:
        thread.start()
    try:
        wait_for("some turns to complete", lambda: sum(
            s.status == 200 for ss in sent for s in ss) >= 5, gw, timeout_s=120)
        signalled = gw.terminate("SIGTERM did not stop the gateway in time")
        exited = time.monotonic()
    finally:
        stop.set()
        for thread in threads:
            thread.join(120)
    assert gw.proc.returncode == 0, gw.logged()
    assert exited - signalled <= DRAIN_S + GRACE_S

    answered = check_answers([s for ss in [*sent, saga] for s in ss], signalled, DRAIN_S,
                             gw.logged)
    [long] = saga
    assert long.status == 200 and long.body["status"] == "failed", long.body
    assert interrupted(long.body["reply"]) and long.body["stop_reason"] == "ERR_TURN_INTERRUPTED"
    assert any(s.status == 503 for ss in sent for s in ss), "no request came during the drain"
    assert (503, "draining") in health, health

    rows = {turn.id: turn for turn in turns_in_db(gw.home)}
    assert set(rows) == set(answered), "a turn row without an answer, or an answer without one"
    for turn_id, body in answered.items():
        row = rows[turn_id]
        assert row.status == body["status"] and row.reply == body["reply"], (row, body)
    long_row = rows[long.body["turn_id"]]
    assert run_state(long_row.flow_run_id) in (StateType.CRASHED, StateType.CANCELLED)
    assert sum(row.status == "completed" for row in rows.values()) >= 5


def test_a_flow_running_in_process_does_not_swallow_sigterm(gateway: Gateway) -> None:
    """A turn's flow runs in the gateway's process when SIGTERM comes: the gateway still
    drains (the turn completes, its client gets the reply) and exits, long before a
    supervisor would kill it."""
    gw = gateway
    gw.start()
    assert gw.proc is not None
    result: list[Sent] = []
    client = threading.Thread(target=lambda: result.append(
        send(gw.base, gw.home.auth(), "tell me something nice", None)))
    client.start()
    wait_for("the turn's flow to run", lambda: any(
        t.status == "running" and t.flow_run_id for t in turns_in_db(gw.home)), gw)
    signalled = gw.terminate("a running flow swallowed SIGTERM")
    client.join(60)
    assert time.monotonic() - signalled <= DRAIN_S + GRACE_S
    [one] = result
    # Prefect's SIGTERM handler would have crashed the flow (and failed the turn)
    assert one.status == 200 and one.body["status"] == "completed", one
    [row] = turns_in_db(gw.home)
    assert row.status == "completed" and run_state(row.flow_run_id) == StateType.COMPLETED


@pytest.mark.parametrize("gateway", [LONG_WINDOW_S], indirect=True)
def test_a_second_signal_stops_at_once(gateway: Gateway) -> None:
    """SIGTERM drains; a second signal (here SIGINT, as a second Ctrl-C) does not wait for
    the window: the process is gone within a few seconds, the turn left to the next start."""
    gw = gateway
    gw.start()
    assert gw.proc is not None
    client = threading.Thread(target=send, args=(gw.base, gw.home.auth(),
                                                 "tell me the whole saga", None))
    client.start()
    wait_for("the turn's flow to run", lambda: any(
        t.status == "running" and t.flow_run_id for t in turns_in_db(gw.home)), gw)
    gw.proc.send_signal(signal.SIGTERM)
    wait_for("the drain", lambda: httpx.get(f"{gw.base}/healthz").status_code == 503, gw)
    again = time.monotonic()
    gw.proc.send_signal(signal.SIGINT)
    try:
        gw.proc.wait(GRACE_S)
    except subprocess.TimeoutExpired:
        pytest.fail("a second signal did not stop the gateway at once\n" + gw.logged())
    assert time.monotonic() - again < GRACE_S < LONG_WINDOW_S
    client.join(120)

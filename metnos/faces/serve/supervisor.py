"""`metnos serve`: one supervised process group (SPEC §1).

Start: the instance lock (`METNOS_HOME/run/serve.lock`: a second `metnos serve` on the same
home is refused, naming the running one's pid), the leftovers of a crashed run stopped
(`leftovers.py`), every port checked (a foreign holder is named), then, in order: the embedded
PostgreSQL (unless external URLs are set) and its watchdog, the Prefect server with its UI on
127.0.0.1:4200 (unless PREFECT_API_URL is set) and the gateway side by side (the gateway waits
for the Prefect server before its own start-up). The gateway also serves the scheduled
deployments (`python -m flows.gateway --schedules`): a deployment runner of its own held ~145
MiB for a loop that polls Prefect (issue 29). Each is recorded in
`METNOS_HOME/run/processes.json` as it starts and forgotten as it stops; each child gets
SIGTERM should the supervisor die (`processes.die_with_parent`), and the watchdog then stops
PostgreSQL once the others have ended.

A child that dies while it runs is restarted with backoff (1, 2, 4... up to 60 s; back to 1 s
once it stayed up `STEADY_S`), one at a time, PostgreSQL first, then the gateway (it is what
the family talks to), each waited healthy before the next; the owner gets a notice.

On SIGTERM/SIGINT it stops them in the reverse order: the watchdog, the gateway (which drains
running turns, then stops its runner: its stop timeout is `[gateway] drain_s` plus
`GATEWAY_STOP_MARGIN_S`), the Prefect server, and PostgreSQL last. (A `runner` recorded by an
earlier version is still stopped as a leftover: `leftovers.py`.)
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import signal
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psutil

from metnos.faces.serve import instance
from metnos.faces.serve.instance import SUPERVISOR, InstanceLock, ProcessRecord
from metnos.faces.serve.leftovers import stop_leftovers
from metnos.faces.serve.ports import instance_ports
from metnos.faces.serve.prefect_access import (
    client_environment,
    ensure_prefect_credential,
    read_credential,
    ui_url,
)
from metnos.faces.serve.processes import (
    Service,
    base_environment,
    ensure_port_free,
    prefect_server,
    responds,
)
from metnos.ground import i18n
from metnos.ground.db.embedded import EmbeddedPostgres
from metnos.ground.db.urls import embedded_postgres, prefect_database_url, uses_embedded
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings

log = logging.getLogger(__name__)

GATEWAY_STOP_MARGIN_S = 15.0  # after the drain window: interrupted turns recorded, runs closed
GATEWAY_START_S = 120.0
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0
LIVENESS_EVERY_S = 5.0  # how often the children with a health URL are asked
STEADY_S = 600.0  # up this long: its next death starts the backoff again at 1 s
POSTGRES = "postgres"
RESTART_ORDER = (POSTGRES, "gateway", "prefect-server", "watchdog")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class _Pending:
    """A child that died: restarted once `not_before` (time.monotonic) has come."""

    died_at: datetime
    not_before: float


@dataclass
class Supervisor:
    settings: Settings
    say: Callable[[str], None] = _stderr  # one line for the person who ran `metnos serve`
    services: list[Service] = field(default_factory=list)
    postgres: EmbeddedPostgres | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: InstanceLock | None = None
    _pending: dict[str, _Pending] = field(default_factory=dict)
    _failures: dict[str, int] = field(default_factory=dict)
    _postgres_started_at: float = 0.0
    _last_look: float = 0.0  # the last health look at the children (time.monotonic)
    _silent_since: dict[str, float] = field(default_factory=dict)

    def _tell(self, line: str) -> None:
        """One line for the person who ran `metnos serve`; a terminal that is gone (a closed
        pipe, a hung-up session) loses the line, never the supervisor."""
        try:
            self.say(line)
        except OSError:
            log.warning("serve.terminal_gone line=%r", line)

    @property
    def owns_home(self) -> bool:
        """True once this supervisor holds the instance's lock (it has something to stop)."""
        return self._lock is not None

    @property
    def log_dir(self) -> Path:
        return self.settings.home / "logs"

    def start(self) -> dict[str, str]:
        """Start everything; returns the addresses to show the user."""
        s = self.settings
        lock = InstanceLock(s)
        lock.acquire()  # raises ERR_SERVE_ALREADY_RUNNING: then nothing here is ours to stop
        self._lock = lock
        instance.record(s, ProcessRecord.of(SUPERVISOR, os.getpid()))
        own_prefect = not os.environ.get("PREFECT_API_URL")
        embedded = uses_embedded(s)
        pg = embedded_postgres(s) if embedded else None
        stopped = stop_leftovers(s, pg)
        instance.record(s, ProcessRecord.of(SUPERVISOR, os.getpid()))
        if stopped:
            log.warning("serve.leftovers_stopped names=%s", ",".join(stopped))
            self._tell(i18n.get("MSG_SERVE_LEFTOVERS_STOPPED", names=", ".join(stopped)))
        for name, port in instance_ports(s, embedded_db=embedded, own_prefect=own_prefect).items():
            ensure_port_free(name, port)
        env = base_environment()
        env["METNOS_HOME"] = str(s.home)
        if pg is not None:
            self.postgres = pg
            self._start_postgres()
            self._launch(Service("watchdog", [sys.executable, "-m", "metnos.faces.serve.watchdog",
                                              str(os.getpid())], env,
                                 self.log_dir / "watchdog.log", stop_timeout_s=5.0), None)
        urls = {"gateway": f"http://{s.gateway.host}:{s.gateway.port}"}
        server: Service | None = None
        if own_prefect:
            ensure_prefect_credential(s)  # an instance set up before the credential existed
            server = prefect_server(port=s.prefect.port, prefect_home=s.prefect_home,
                                    database_url=prefect_database_url(s),
                                    log_path=self.log_dir / "prefect-server.log",
                                    auth_string=read_credential(s) or "")
            self._launch(server, None)  # waited for below, while the gateway starts too
            env["PREFECT_API_URL"] = f"http://127.0.0.1:{s.prefect.port}/api"
        urls["prefect_ui"] = ui_url(s)
        env.setdefault("PREFECT_HOME", str(s.prefect_home))
        env.update(client_environment(s))  # the gateway talks to Prefect with it
        gateway = Service("gateway", [sys.executable, "-m", "flows.gateway", "--schedules"], env,
                          self.log_dir / "gateway.log", health_url=f"{urls['gateway']}/healthz",
                          stop_timeout_s=s.gateway.drain_s + GATEWAY_STOP_MARGIN_S)
        # side by side: the gateway loads its code while the Prefect server comes up, and
        # waits for it before its own start-up talks to it (`flows.gateway.main`)
        self._launch(gateway, None)
        if server is not None:
            server.wait_healthy(s.prefect.startup_timeout_s, self._stop)
        gateway.wait_healthy(GATEWAY_START_S, self._stop)
        return urls

    def model_check_at_start(self, urls: dict[str, str], lang: str) -> list[str]:
        """The model, checked once at start (after `start()`, before the "ready" banner):
        what the gateway's own probe found (`GET /api/status`, the owner's view, which asks
        the model if nothing has yet). A configuration error or a model that does not
        answer is said here in `lang`, with its fix; nothing when it answers or none is
        configured, or when the gateway cannot be asked (it says so on its own surfaces)."""
        request = urllib.request.Request(f"{urls['gateway']}/api/status", headers={
            "Authorization": f"Bearer {self.settings.owner_token()}",
            "Accept-Language": lang})
        try:
            with urllib.request.urlopen(request, timeout=20) as resp:  # noqa: S310 - loopback
                found = json.load(resp)
        except (OSError, ValueError, http.client.HTTPException):  # e.g. cut short
            log.warning("serve.model_check_unavailable", exc_info=True)
            return []
        if not isinstance(found, dict) or found.get("model") not in (
                "unreachable", "misconfigured"):
            return []
        lines = [i18n.get("MSG_SERVE_MODEL_PROBLEM", lang, line=str(found.get("line", "")))]
        if found.get("fix"):
            lines.append(i18n.get("MSG_STATUS_FIX", lang, fix=str(found["fix"])))
        return lines

    @staticmethod
    def sandbox_ok(gateway_url: str) -> bool:
        """What the gateway's start-up canary found (False when it cannot be asked)."""
        try:
            with urllib.request.urlopen(f"{gateway_url}/healthz", timeout=5) as resp:  # noqa: S310
                return bool(json.load(resp).get("sandbox") == "ok")
        except (OSError, ValueError, http.client.HTTPException):  # e.g. cut short
            return False

    def handle_signals(self) -> None:
        """SIGTERM/SIGINT ask for a stop, during start-up too (checked between launches)."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self._stop.set())

    def _launch(self, service: Service, healthy_within_s: float | None) -> None:
        if self._stop.is_set():
            raise MetnosError("ERR_SERVE_INTERRUPTED")
        self.services.append(service)
        self._start(service, healthy_within_s)

    def _start(self, service: Service, healthy_within_s: float | None) -> None:
        service.start()
        self._record(service.name, service.pid)
        if healthy_within_s is not None:
            service.wait_healthy(healthy_within_s, self._stop)

    def _start_postgres(self) -> None:
        assert self.postgres is not None
        self.postgres.start()
        self._postgres_started_at = time.monotonic()
        self._record(POSTGRES, self.postgres.postmaster_pid())

    def _record(self, name: str, pid: int | None) -> None:
        if pid is None:
            return
        try:
            instance.record(self.settings, ProcessRecord.of(name, pid))
        except psutil.Error:  # gone already: the watch loop finds it dead
            log.warning("serve.record_failed name=%s pid=%s", name, pid)

    # -- while running --------------------------------------------------------------------
    def wait(self) -> int:
        """Block until a signal arrives, restarting the children that die or hang; 0 then.
        A look that fails (a bug, a full disk) is logged and the next one comes a second
        later: the supervisor is what keeps the rest running, so nothing stops it but a
        signal."""
        while not self._stop.wait(1.0):
            try:
                self._notice_hangs()
                self._notice_deaths()
                self._restart_next()
            except Exception:
                log.exception("serve.watch_failed")
        return 0

    def _notice_hangs(self) -> None:
        """A child with a health URL that has answered nothing for `[gateway] hung_after_s`
        (frozen, deadlocked) is killed with its process group: the next look finds it dead
        and restarts it like any child that died."""
        now = time.monotonic()
        if now - self._last_look < LIVENESS_EVERY_S:
            return
        self._last_look = now
        for svc in self.services:
            if svc.health_url is None or svc.name in self._pending or not svc.running():
                self._silent_since.pop(svc.name, None)
                continue
            if responds(svc.health_url):
                self._silent_since.pop(svc.name, None)
                continue
            since = self._silent_since.setdefault(svc.name, now)
            if now - since >= self.settings.gateway.hung_after_s:
                log.error("service.hung name=%s silent_s=%.0f", svc.name, now - since)
                self._tell(i18n.get("MSG_SERVICE_HUNG", name=svc.name,
                                  seconds=f"{now - since:.0f}"))
                svc.kill()
                self._silent_since.pop(svc.name, None)

    def _notice_deaths(self) -> None:
        now = time.monotonic()
        for svc in self.services:
            if svc.name not in self._pending and not svc.running():
                svc.end_orphans()
                self._died(svc.name, svc.started_at, str(svc.log_path), now)
        pg = self.postgres
        if pg is not None and POSTGRES not in self._pending and not pg.is_running():
            self._died(POSTGRES, self._postgres_started_at, str(pg.log_file), now)

    def _died(self, name: str, started_at: float, log_path: str, now: float) -> None:
        if now - started_at >= STEADY_S:
            self._failures[name] = 0
        failures = self._failures.get(name, 0)
        delay = min(BACKOFF_FIRST_S * 2 ** failures, BACKOFF_MAX_S)
        self._failures[name] = failures + 1
        self._pending[name] = _Pending(datetime.now(UTC), now + delay)
        instance.forget(self.settings, name)
        log.error("service.died name=%s log=%s restart_in_s=%.0f", name, log_path, delay)
        self._tell(i18n.get("MSG_SERVICE_DIED_RESTARTING", name=name, log=log_path,
                          seconds=f"{delay:.0f}"))

    def _restart_next(self) -> None:
        """One restart at a time, in `RESTART_ORDER`: a later one waits for an earlier."""
        name = next((n for n in RESTART_ORDER if n in self._pending), None)
        if name is None or self._pending[name].not_before > time.monotonic():
            return
        pending = self._pending[name]
        svc = next((s for s in self.services if s.name == name), None)
        try:
            if name == POSTGRES:
                self._start_postgres()
            elif svc is not None:
                self._start(svc, GATEWAY_START_S if name == "gateway"
                            else self.settings.prefect.startup_timeout_s
                            if svc.health_url else None)
        except (MetnosError, OSError) as exc:  # not healthy in time: stopped, tried later
            log.error("service.restart_failed name=%s: %s", name, exc)
            if svc is not None:
                svc.stop()
            del self._pending[name]
            now = time.monotonic()
            self._died(name, now, str(svc.log_path) if svc else name, now)
            self._pending[name].died_at = pending.died_at
            return
        del self._pending[name]
        log.warning("service.restarted name=%s", name)
        self._tell(i18n.get("MSG_SERVICE_RESTARTED", name=name))
        # here, not at the top: the notice needs the database's code (tens of megabytes),
        # which a supervisor whose children never die never loads
        from metnos.faces.serve.notice import tell_owner_restarted

        tell_owner_restarted(self.settings, name, pending.died_at)

    # -- stop -----------------------------------------------------------------------------
    def stop(self) -> None:
        """The watchdog first (so nothing is stopped twice), then the others in reverse
        order, PostgreSQL last; each record forgotten as it stops."""
        self._stop.set()
        if self._lock is None:
            return  # another supervisor runs this home: nothing here is ours
        first = [svc for svc in self.services if svc.name == "watchdog"]
        for service in [*first, *reversed([s for s in self.services if s not in first])]:
            service.stop()
            instance.forget(self.settings, service.name)
        self.services.clear()
        if self.postgres is not None:
            self.postgres.stop()
            instance.forget(self.settings, POSTGRES)
            self.postgres = None
        instance.forget(self.settings, SUPERVISOR)
        self._lock.release()
        self._lock = None

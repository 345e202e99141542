"""`metnos serve`: one supervised process group (SPEC §1).

Starts, in order: the embedded PostgreSQL (unless external URLs are set), the Prefect server
with its UI on 127.0.0.1:4200 (unless PREFECT_API_URL is set), the gateway, and the
deployment runner. On SIGTERM/SIGINT, or when any child dies, it stops them in the reverse
order: the runner, the gateway (which drains running turns), the Prefect server, and
PostgreSQL last.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from metnos import i18n
from metnos.db.embedded import EmbeddedPostgres
from metnos.db.engine import embedded_postgres, prefect_database_url, uses_embedded
from metnos.errors import MetnosError
from metnos.home import ensure_prefect_credential
from metnos.serve.prefect_access import client_environment, read_credential, ui_url
from metnos.serve.processes import Service, base_environment, ensure_port_free, prefect_server
from metnos.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class Supervisor:
    settings: Settings
    services: list[Service] = field(default_factory=list)
    postgres: EmbeddedPostgres | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    @property
    def log_dir(self) -> Path:
        return self.settings.home / "logs"

    def start(self) -> dict[str, str]:
        """Start everything; returns the addresses to show the user."""
        s = self.settings
        env = base_environment()
        env["METNOS_HOME"] = str(s.home)
        ensure_port_free("gateway", s.gateway.port)
        if not os.environ.get("PREFECT_API_URL"):
            ensure_port_free("prefect-server", s.prefect.port)
        if uses_embedded(s):
            self.postgres = embedded_postgres(s)
            self.postgres.start()
        urls = {"gateway": f"http://{s.gateway.host}:{s.gateway.port}"}
        if not os.environ.get("PREFECT_API_URL"):
            ensure_prefect_credential(s)  # an instance set up before the credential existed
            server = prefect_server(port=s.prefect.port, prefect_home=s.prefect_home,
                                    database_url=prefect_database_url(s),
                                    log_path=self.log_dir / "prefect-server.log",
                                    auth_string=read_credential(s) or "")
            self._launch(server, s.prefect.startup_timeout_s)
            env["PREFECT_API_URL"] = f"http://127.0.0.1:{s.prefect.port}/api"
        urls["prefect_ui"] = ui_url(s)
        env.setdefault("PREFECT_HOME", str(s.prefect_home))
        env.update(client_environment(s))  # gateway and runner talk to Prefect with it
        gateway = Service("gateway", [sys.executable, "-m", "flows.gateway"], env,
                          self.log_dir / "gateway.log", health_url=f"{urls['gateway']}/healthz",
                          stop_timeout_s=35.0)
        self._launch(gateway, 120.0)
        runner = Service("runner", [sys.executable, "-m", "deployments.serve"], env,
                         self.log_dir / "runner.log", stop_timeout_s=20.0)
        self._launch(runner, None)
        return urls

    @staticmethod
    def sandbox_ok(gateway_url: str) -> bool:
        """What the gateway's start-up canary found (False when it cannot be asked)."""
        try:
            with urllib.request.urlopen(f"{gateway_url}/healthz", timeout=5) as resp:  # noqa: S310
                return bool(json.load(resp).get("sandbox") == "ok")
        except (OSError, ValueError):
            return False

    def handle_signals(self) -> None:
        """SIGTERM/SIGINT ask for a stop, during start-up too (checked between launches)."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self._stop.set())

    def _launch(self, service: Service, healthy_within_s: float | None) -> None:
        if self._stop.is_set():
            raise MetnosError("ERR_SERVE_INTERRUPTED")
        self.services.append(service)
        service.start()
        if healthy_within_s is not None:
            service.wait_healthy(healthy_within_s)

    def wait(self) -> int:
        """Block until a signal arrives or a child dies; 0 on a requested stop."""
        while not self._stop.wait(1.0):
            dead = [svc for svc in self.services if not svc.running()]
            if dead:
                for svc in dead:
                    log.error("service.died name=%s log=%s", svc.name, svc.log_path)
                    print(i18n.get("ERR_SERVICE_DIED", name=svc.name, log=str(svc.log_path)),
                          file=sys.stderr)
                return 1
        return 0

    def stop(self) -> None:
        for service in reversed(self.services):
            service.stop()
        self.services.clear()
        if self.postgres is not None:
            self.postgres.stop()
            self.postgres = None

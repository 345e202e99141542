"""The instance's ports and processes: who holds each port, what runs, what a crash left.

A port is free, held by this instance (a process of its records, or a child of one), held by
a leftover of this instance (its supervisor is gone), or held by a foreign process, named by
pid and command with the setting that moves Metnos elsewhere.
"""

from __future__ import annotations

import os

import psutil

from metnos.faces.doctor.finding import Finding, text
from metnos.faces.serve import instance, ports
from metnos.ground.db.engine import uses_embedded
from metnos.ground.settings import Settings

# the setting that moves each service to another port: (metnos.toml, environment)
PORT_SETTINGS = {
    "gateway": ("[gateway] port", "METNOS_GATEWAY_PORT"),
    "prefect-server": ("[prefect] port", "METNOS_PREFECT_PORT"),
    "postgres": ("[database] port", "METNOS_DATABASE_PORT"),
}

LOGS = {"postgres": "pg/postgres.log"}  # where a process's log is, when not logs/<name>.log


def own_prefect() -> bool:
    """True when Metnos runs its own Prefect server (PREFECT_API_URL not set)."""
    return not os.environ.get("PREFECT_API_URL")


def check_ports(settings: Settings, lang: str | None) -> list[Finding]:
    wanted = ports.instance_ports(settings, embedded_db=uses_embedded(settings),
                                  own_prefect=own_prefect())
    alive = instance.running(settings)
    supervised = any(r.name == instance.SUPERVISOR for r in alive)
    ours = family({r.pid for r in alive})
    found = []
    for name, port in wanted.items():
        host = settings.gateway.host if name == "gateway" else "127.0.0.1"
        found.append(_port(name, port, ports.holder(port, host), ours, supervised, lang))
    return found


def _port(name: str, port: int, holder: ports.Holder | None, ours: set[int],
          supervised: bool, lang: str | None) -> Finding:
    check = f"port:{name}"
    if holder is None:
        return Finding(check, True, text("DOCTOR_PORT_FREE", lang, service=name, port=port))
    if holder.pid is not None and holder.pid in ours:
        if supervised:
            return Finding(check, True, text("DOCTOR_PORT_OURS", lang, service=name,
                                             port=port, pid=holder.pid))
        return Finding(check, False, text("DOCTOR_PORT_LEFTOVER", lang, service=name,
                                          port=port, pid=holder.pid),
                       text("DOCTOR_FIX_LEFTOVERS", lang))
    toml, env = PORT_SETTINGS[name]
    who = (text("DOCTOR_HOLDER", lang, pid=holder.pid, command=holder.command)
           if holder.pid is not None else text("DOCTOR_HOLDER_UNKNOWN", lang))
    return Finding(check, False, text("DOCTOR_PORT_FOREIGN", lang, service=name, port=port,
                                      holder=who),
                   text("DOCTOR_FIX_PORT", lang, setting=toml, env=env))


def family(pids: set[int]) -> set[int]:
    """The recorded pids and their descendants (a server may listen from a child)."""
    found = set(pids)
    for pid in pids:
        try:
            found |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def check_processes(settings: Settings, lang: str | None) -> Finding:
    records = instance.recorded(settings)
    alive = [r for r in records if r.alive()]
    dead = [r for r in records if r not in alive]
    supervisor = next((r for r in alive if r.name == instance.SUPERVISOR), None)
    if not alive:
        return Finding("processes", None, text("DOCTOR_PROCESSES_NONE", lang))
    if supervisor is None:
        return Finding("processes", False,
                       text("DOCTOR_PROCESSES_LEFTOVERS", lang, processes=_listed(alive)),
                       text("DOCTOR_FIX_LEFTOVERS", lang))
    if dead:
        logs = ", ".join(LOGS.get(r.name, f"logs/{r.name}.log") for r in dead)
        return Finding("processes", False,
                       text("DOCTOR_PROCESSES_MISSING", lang, pid=supervisor.pid,
                            missing=", ".join(r.name for r in dead)),
                       text("DOCTOR_FIX_PROCESSES_MISSING", lang, logs=logs))
    return Finding("processes", True, text("DOCTOR_PROCESSES_RUNNING", lang,
                                           processes=_listed(alive)))


def _listed(records: list[instance.ProcessRecord]) -> str:
    return ", ".join(f"{r.name} ({r.pid})" for r in records)


def check_overlay(settings: Settings, lang: str | None) -> Finding | None:
    """Where the family's devices reach Metnos (`[gateway] expose`); None when it is not set
    (this computer and Telegram only)."""
    from metnos.faces.web.overlay import ExposeUnavailable, exposed
    from metnos.ground import i18n

    try:
        found = exposed(settings)
    except ExposeUnavailable as exc:
        return Finding("overlay", False, i18n.message(exc, lang), text("DOCTOR_FIX_OVERLAY", lang))
    if found is None:
        return None
    name = settings.gateway.expose_name or sorted(found.names)[0]
    scheme = "https" if settings.gateway.expose_tls_cert else "http"
    line = text("DOCTOR_OVERLAY_OK", lang, url=f"{scheme}://{name}:{settings.gateway.port}",
                address=found.address)
    if not found.overlay:
        return Finding("overlay", None, line + " " + text(
            "MSG_GATEWAY_EXPOSED_OUTSIDE_OVERLAY", lang, address=found.address))
    return Finding("overlay", True, line)

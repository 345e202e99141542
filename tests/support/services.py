"""Start the services the test session needs, run a command, stop them.

    python -m tests.support.services [--workers N] -- python -m pytest [-n N]

Starts ONE embedded PostgreSQL (a throwaway cluster under a temp dir) and one Prefect server
per pytest-xdist worker (N, default 1) on it, each on its own database and locked by a
credential as `metnos serve` locks it, exports their coordinates to the child command
(PREFECT_API_URL, PREFECT_API_AUTH_STRING, METNOS_TEST_PG_*, METNOS_TEST_PREFECT_*), runs the
command, then stops them in order, whatever the command's outcome. This is what `make test`,
`.ci/run` and `make bench` use (SPEC §1 'Prefect operating rules').

Each xdist worker takes its own Prefect server (`use_worker_services`, called from
tests/conftest.py before Prefect is imported): deployments (`reminder/at`,
`owner-task/scheduled`, `remote-step/laptop`), work pools and flow runs are the server's
state, and two workers sharing one would see each other's.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from metnos.faces.serve.prefect_access import AUTH_ENV, new_credential
from metnos.faces.serve.processes import Service, base_environment, prefect_server
from metnos.ground.db.embedded import EmbeddedPostgres

URLS_ENV, DBS_ENV = "METNOS_TEST_PREFECT_URLS", "METNOS_TEST_PREFECT_DATABASES"
# the workers' fixtures, engines and Prefect servers at once: more than the default 100
MAX_CONNECTIONS = 400


def database_name(index: int) -> str:
    return "prefect" if index == 0 else f"prefect_{index}"


def use_worker_services() -> None:
    """In a pytest-xdist worker (`gwN`), point this process at Prefect server N and a Prefect
    home of its own. Must run before `prefect` is imported (its settings are read then)."""
    worker, urls = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get(URLS_ENV, "").split()
    if not worker or not urls:
        return
    index = int(worker.removeprefix("gw"))
    if index >= len(urls):
        raise RuntimeError(f"worker {worker} has no Prefect server of its own: start as many "
                           f"as workers (python -m tests.support.services --workers N)")
    if "prefect" in sys.modules:
        raise RuntimeError("prefect was imported before the worker chose its server")
    os.environ["PREFECT_API_URL"] = urls[index]
    os.environ["METNOS_TEST_PREFECT_DATABASE"] = os.environ[DBS_ENV].split()[index]
    home = os.environ.get("PREFECT_HOME")
    if home and not home.endswith(f"-{worker}"):  # a child pytest inherits the worker's
        os.environ["PREFECT_HOME"] = f"{home}-{worker}"


def _tree_cpu_s(pid: int | None) -> float:
    """CPU seconds of a live process and its live children (the ones gone are not counted)."""
    if pid is None:
        return 0.0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def cpu_report(wall_s: float, servers: list[Service], postmaster: int | None) -> str:
    """Where the session's CPU went: the command (pytest with its workers and everything they
    started and waited for), the Prefect servers, PostgreSQL. Issue 28's suite time is CPU
    bound on two cores; this says whose."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = children.ru_utime + children.ru_stime
    prefect = sum(_tree_cpu_s(server.pid) for server in servers)
    postgres = _tree_cpu_s(postmaster)
    total = command + prefect + postgres
    return (f"[services] {wall_s:.0f} s of wall time, {total:.0f} CPU-s: the command "
            f"{command:.0f} ({command / total:.0%}), the Prefect servers {prefect:.0f} "
            f"({prefect / total:.0%}), PostgreSQL {postgres:.0f} ({postgres / total:.0%})"
            if total else f"[services] {wall_s:.0f} s of wall time")


def _parse(argv: list[str]) -> tuple[int, list[str]] | None:
    if "--" not in argv:
        return None
    options, command = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    if options and (len(options) != 2 or options[0] != "--workers" or not options[1].isdigit()):
        return None
    return (int(options[1]) if options else 1), command


def main(argv: list[str]) -> int:
    parsed = _parse(argv)
    if parsed is None:
        print("usage: python -m tests.support.services [--workers N] -- COMMAND...",
              file=sys.stderr)
        return 2
    workers, command = parsed
    from tests.support.pg import free_port  # not at import: conftest imports this module first

    # a SIGTERM (`timeout`, CI's stop) stops the command and the services like a Ctrl-C: the
    # command is killed by `subprocess.call`, the rest in `finally`
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    root = Path(tempfile.mkdtemp(prefix="metnos-test-services-"))
    os.chmod(root, 0o755)
    pg = EmbeddedPostgres(root / "pg", free_port(), root / "pg.password", durable=False)
    servers: list[Service] = []
    t0 = time.monotonic()
    try:
        pg.initialise()
        with (pg.data_dir / "postgresql.conf").open("a") as conf:
            conf.write(f"max_connections = {MAX_CONNECTIONS}\n")
        pg.start()
        credential = new_credential()  # locked as `metnos serve` locks it (SPEC §1)
        urls = []
        for index in range(max(workers, 1)):
            pg.ensure_database(database_name(index))
            port = free_port()
            servers.append(prefect_server(
                port=port, prefect_home=root / f"prefect-{index}",
                database_url=pg.url(database_name(index), driver="asyncpg"),
                log_path=root / f"prefect-{index}.log", auth_string=credential, ui=False))
            servers[-1].start()
            urls.append(f"http://127.0.0.1:{port}/api")
        for server in servers:
            server.wait_healthy(timeout_s=180)
        print(f"[services] postgres and {len(servers)} prefect server(s) ready in "
              f"{time.monotonic() - t0:.1f}s", flush=True)
        env = base_environment()
        env.update({
            "PREFECT_API_URL": urls[0],
            URLS_ENV: " ".join(urls),
            DBS_ENV: " ".join(database_name(i) for i in range(len(servers))),
            "METNOS_TEST_PREFECT_DATABASE": database_name(0),
            AUTH_ENV: credential,
            "PREFECT_HOME": str(root / "prefect-client"),
            "PREFECT_LOGGING_LEVEL": "WARNING",
            "METNOS_TEST_PG_DATA": str(pg.data_dir),
            "METNOS_TEST_PG_PORT": str(pg.port),
            "METNOS_TEST_PG_PASSWORD_FILE": str(pg.password_file),
        })
        started = time.monotonic()
        rc = subprocess.call(command, env=env)  # noqa: S603 - the developer's own command
        print(cpu_report(time.monotonic() - started, servers, pg.postmaster_pid()), flush=True)
        return rc
    finally:
        for server in servers:
            server.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

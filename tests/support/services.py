"""Start the services the test session needs, run a command, stop them.

    python -m tests.support.services -- python -m pytest

Starts ONE embedded PostgreSQL (a throwaway cluster under a temp dir) and ONE Prefect server
on it, locked by a credential as `metnos serve` locks it, exports their coordinates to the child
command (PREFECT_API_URL, PREFECT_API_AUTH_STRING, METNOS_TEST_PG_*), runs
the command, then stops both in order, whatever the command's outcome. This is what
`make test`, `.ci/run` and `make bench` use (SPEC §1 'Prefect operating rules').
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from metnos.db.embedded import EmbeddedPostgres
from metnos.serve.prefect_access import AUTH_ENV, new_credential
from metnos.serve.processes import base_environment, prefect_server
from tests.support.pg import free_port


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: python -m tests.support.services -- COMMAND...", file=sys.stderr)
        return 2
    command = argv[argv.index("--") + 1:]
    root = Path(tempfile.mkdtemp(prefix="metnos-test-services-"))
    os.chmod(root, 0o755)
    pg = EmbeddedPostgres(root / "pg", free_port(), root / "pg.password", durable=False)
    server = None
    t0 = time.monotonic()
    try:
        pg.initialise()
        pg.start()
        pg.ensure_database("prefect")
        server_port = free_port()
        credential = new_credential()  # locked as `metnos serve` locks it (SPEC §1)
        server = prefect_server(
            port=server_port, prefect_home=root / "prefect",
            database_url=pg.url("prefect", driver="asyncpg"), log_path=root / "prefect.log",
            auth_string=credential, ui=False,
        )
        server.start()
        server.wait_healthy(timeout_s=180)
        print(f"[services] postgres and prefect ready in {time.monotonic() - t0:.1f}s", flush=True)
        env = base_environment()
        env.update({
            "PREFECT_API_URL": f"http://127.0.0.1:{server_port}/api",
            AUTH_ENV: credential,
            "PREFECT_HOME": str(root / "prefect-client"),
            "PREFECT_LOGGING_LEVEL": "WARNING",
            "METNOS_TEST_PG_DATA": str(pg.data_dir),
            "METNOS_TEST_PG_PORT": str(pg.port),
            "METNOS_TEST_PG_PASSWORD_FILE": str(pg.password_file),
        })
        return subprocess.call(command, env=env)  # noqa: S603 - the developer's own command
    finally:
        if server is not None:
            server.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

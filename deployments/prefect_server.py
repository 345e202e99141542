"""Metnos's Prefect server: `prefect server start` in the foreground, less its schema pages.

Prefect's basic auth (`PREFECT_SERVER_API_AUTH_STRING`) guards the API app mounted at `/api`,
but the top-level app and the UI app are FastAPI apps of their own, each with FastAPI's
default `/docs`, `/redoc` and `/openapi.json`: those answered anyone without the credential
(issue 25). No Prefect setting turns them off, so this launcher builds the same app
`prefect server start` runs (`create_app(final=True)`, the services included), removes those
routes from the top-level and UI apps (the API's own, behind the credential, stay), and runs
it with uvicorn as Prefect's foreground server does. Settings come from the environment that
`metnos.faces.serve.processes.prefect_server` prepares.

    python -m deployments.prefect_server --host 127.0.0.1 --port 4200
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import prefect
import uvicorn
from fastapi import FastAPI
from prefect.server.api.server import create_app
from prefect.settings import PREFECT_SERVER_API_KEEPALIVE_TIMEOUT, PREFECT_SERVER_LOGGING_LEVEL
from starlette.routing import Mount

SCHEMA_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})


def without_schema_pages(app: FastAPI) -> FastAPI:
    """`app` and the apps mounted at its root (the UI) without their schema pages."""
    apps: list[Any] = [app] + [r.app for r in app.router.routes
                               if isinstance(r, Mount) and r.path == "" and
                               isinstance(r.app, FastAPI)]
    for each in apps:
        each.router.routes[:] = [r for r in each.router.routes
                                 if getattr(r, "path", None) not in SCHEMA_PATHS]
        each.openapi_url = each.docs_url = each.redoc_url = None
    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deployments.prefect_server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    app = without_schema_pages(create_app(final=True))
    uvicorn.run(app, app_dir=str(prefect.__module_path__.parent), host=args.host,
                port=args.port, timeout_keep_alive=PREFECT_SERVER_API_KEEPALIVE_TIMEOUT.value(),
                log_level=PREFECT_SERVER_LOGGING_LEVEL.value().lower())
    return 0


if __name__ == "__main__":
    sys.exit(main())

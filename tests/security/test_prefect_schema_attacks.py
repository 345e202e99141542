"""Issue 25 finding 11: the Prefect server of `metnos serve` answered `/openapi.json`, `/docs`
and `/redoc` without the credential (the schema of every route: a map for an attacker). Prefect's
basic auth guards only the API app at `/api`; no setting turns the other apps' schema pages off,
so Metnos starts the server without them (`deployments/prefect_server.py`). The API's own schema
stays, behind the credential; the UI and the health check still answer."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.serve_process import ServedInstance, served_instance

SCHEMA_PAGES = ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc",
                "/api/openapi.json", "/api/docs", "/api/redoc", "/ui-settings/../openapi.json")


@pytest.fixture(scope="module")
def instance(compiled_catalog: Path) -> Iterator[ServedInstance]:
    with served_instance(compiled_catalog, METNOS_LANG="en") as served:
        yield served


def shows_schema(resp: httpx.Response) -> bool:
    text = resp.text.lower()
    return resp.status_code == 200 and ('"openapi"' in text or "swagger" in text
                                        or "redoc" in text)


@pytest.mark.attack
def test_the_prefect_schema_pages_need_the_credential(instance: ServedInstance) -> None:
    for path in SCHEMA_PAGES:
        resp = httpx.get(instance.prefect + path, timeout=120)
        assert not shows_schema(resp), (path, resp.status_code, resp.text[:200])
    # what must keep working: the health check, and the API's schema for the owner
    assert httpx.get(instance.prefect + "/api/health").status_code == 200
    credential = instance.prefect_credential()
    auth = {"Authorization": "Basic " + base64.b64encode(credential.encode()).decode()}
    assert shows_schema(httpx.get(instance.prefect + "/api/openapi.json", headers=auth,
                                  timeout=120))

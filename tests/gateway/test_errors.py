"""The gateway's errors as the fuzzer (test_fuzz.py) found them: every one is the JSON error
body in the caller's language, with the status the schema declares, never a 500."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from metnos.ground import i18n
from tests.support.home import Home, MakeHome, gateway_client


@pytest.fixture
async def client(make_home: MakeHome) -> AsyncIterator[httpx.AsyncClient]:
    home: Home = make_home(lang="en")
    async with gateway_client(home, prefect=False) as client:
        yield client


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_an_unreadable_body_is_a_400_in_the_callers_language(
        client: httpx.AsyncClient, lang: str) -> None:
    resp = await client.post("/api/turns", content=b'{"text": "\xff\xfe"}',
                             headers={"Content-Type": "application/json",
                                      "Accept-Language": lang})
    assert resp.status_code == 400, resp.text
    assert resp.json() == {"error": {"key": "ERR_HTTP_400", "message": i18n.get(
        "ERR_HTTP_400", lang)}}


@pytest.mark.parametrize(("method", "url", "body"), [
    ("POST", "/api/pairing/revoke", {"channel": "telegram", "sender_id": "4\x002"}),
    ("POST", "/api/turns", {"text": "ciao\x00"}),
    ("GET", "/api/sessions/s%00x", None),
])
async def test_a_nul_character_is_refused_not_a_500(
        client: httpx.AsyncClient, method: str, url: str, body: object) -> None:
    resp = await client.request(method, url, json=body, headers={"Accept-Language": "it"})
    assert resp.status_code == 422, resp.text
    assert resp.json() == {"error": {"key": "ERR_REQUEST_UNSTORABLE", "message": i18n.get(
        "ERR_REQUEST_UNSTORABLE", "it")}}


async def test_the_schema_declares_every_error_as_the_error_body(
        client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorPublic"}}}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            declared = operation["responses"]
            expected = {"400", "403", "411", "413", "422"} | (set() if path == "/healthz"
                                                              else {"401"})
            assert expected <= set(declared), (method, path, sorted(declared))
            assert all(declared[code]["content"] == error for code in expected), (method, path)

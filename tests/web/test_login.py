"""The web login end to end: `metnos login` → link → cookie → API → logout, through the real
gateway (FastAPI + httpx) on the real database."""

from __future__ import annotations

import json
import re
import threading
from datetime import timedelta

import pytest
import typer
from sqlmodel import select
from typer.testing import CliRunner

from metnos.faces.cli.login import login
from metnos.faces.web import service as web
from metnos.faces.web.models import LoginToken, WebSession
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import utcnow
from metnos.ground.settings import WebSettings
from tests.support.home import Home, MakeHome
from tests.web.support import ORIGIN, audit_lines, browser, link_path, log_in

cli = typer.Typer()
cli.command()(login)
runner = CliRunner()


def _engine(home: Home):  # type: ignore[no-untyped-def]
    return make_engine(database_url(home.settings))


def _issue(home: Home, *, age_s: int = 0, ttl_s: int = 600) -> str:
    engine = _engine(home)
    try:
        with db_session(engine) as db:
            return web.issue_login_token(db, ttl_s=ttl_s,
                                         now=utcnow() - timedelta(seconds=age_s)).token
    finally:
        engine.dispose()


async def test_full_login_cookie_api_logout(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with browser(home) as client:
        path = link_path(home)
        token = path.split("token=")[1]
        resp = await client.get(path)
        assert resp.status_code == 303 and resp.headers["location"] == "/"
        assert resp.headers["cache-control"] == "no-store"
        assert resp.headers["referrer-policy"] == "no-referrer"
        cookie = resp.headers["set-cookie"]
        attrs = {a.strip().split("=")[0].lower() for a in cookie.split(";")}
        assert cookie.startswith("metnos_session=")
        assert {"httponly", "path", "max-age", "samesite"} <= attrs and "secure" not in attrs
        assert "samesite=strict" in cookie.lower() and "path=/" in cookie.lower()
        assert "max-age=2592000" in cookie.lower()
        secret = client.cookies["metnos_session"]
        assert web.well_formed(secret) and secret != token

        page = await client.get("/")  # the web chat
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert home.token not in page.text and secret not in page.text
        audit = await client.get("/api/audit")
        assert audit.status_code == 200
        assert [x["action"] for x in audit.json()][-1] == "web.login"

        out = await client.post("/api/logout", headers={"Origin": ORIGIN})
        assert out.status_code == 200 and out.json()["logged_out"] is True
        assert "metnos_session=;" in out.headers["set-cookie"]
        assert "metnos_session" not in client.cookies
        client.cookies.set("metnos_session", secret)  # a copy of the cookie kept somewhere
        again = await client.get("/api/audit")
        assert again.status_code == 401
        assert again.json()["error"]["key"] == "ERR_AUTH_SESSION_INVALID"
        assert "max-age=0" in again.headers["set-cookie"].lower()  # the dead cookie is cleared
    lines = audit_lines(home)
    assert [(x["action"], x["decision"]) for x in lines] == [
        ("web.login", "allow"), ("web.logout", "info")]
    assert lines[0]["action_id"] == lines[1]["action_id"]
    text = (home.workspace / ".audit" / "audit.jsonl").read_text()
    assert token not in text and secret not in text and web.digest(secret) not in text


async def test_only_digests_are_stored(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with browser(home) as client:
        path = link_path(home)
        secret = await _follow(client, path)
    token = path.split("token=")[1]
    engine = _engine(home)
    try:
        with db_session(engine) as db:
            [row] = db.exec(select(LoginToken)).all()
            [session] = db.exec(select(WebSession)).all()
    finally:
        engine.dispose()
    assert row.token_digest == web.digest(token) and row.used_at is not None
    assert session.session_digest == web.digest(secret) and session.user_id == "owner"
    assert session.login_token_id == row.id
    assert token not in repr(row.model_dump()) and secret not in repr(session.model_dump())


async def test_dead_tokens_and_sessions_are_pruned(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    stale = _issue(home, age_s=3600)
    async with browser(home) as client:
        live = await log_in(client, home)
        ended = await log_in(client, home)  # ends `live`'s session: revoked
    assert live != ended
    _issue(home)
    engine = _engine(home)
    try:
        with db_session(engine) as db:
            tokens = {row.token_digest for row in db.exec(select(LoginToken))}
            sessions = {row.session_digest for row in db.exec(select(WebSession))}
    finally:
        engine.dispose()
    assert web.digest(stale) not in tokens and len(tokens) == 3  # two used, one new
    assert sessions == {web.digest(ended)}


async def _follow(client, path: str) -> str:  # type: ignore[no-untyped-def]
    resp = await client.get(path)
    assert resp.status_code == 303, resp.text
    return str(client.cookies["metnos_session"])


@pytest.mark.attack
async def test_a_link_works_once_and_failures_look_alike(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    path = link_path(home)
    expired = f"/login?token={_issue(home, age_s=601)}"
    async with browser(home) as first:
        assert (await first.get(path)).status_code == 303
    pages = []
    async with browser(home) as second:
        for attempt in (path, expired, "/login?token=" + "A" * 43):
            resp = await second.get(attempt)
            assert resp.status_code == 401 and "metnos_session" not in second.cookies
            assert resp.headers["content-type"].startswith("text/html")
            pages.append(resp.text)
    assert pages[0] == pages[1] == pages[2]  # used, expired, unknown: never said which
    assert "run `metnos login`" in pages[0]
    reasons = [(x["decision"], x["reason"]) for x in audit_lines(home)]
    assert reasons == [("allow", "ok")] + [("deny", "ERR_WEB_LOGIN_INVALID")] * 3


@pytest.mark.attack
async def test_two_racing_redeemers_get_one_session(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    token = _issue(home)
    engine = _engine(home)
    results: list[str] = []
    barrier = threading.Barrier(4)

    def redeem(n: int) -> None:
        barrier.wait()
        with db_session(engine) as db:
            results.append(web.redeem(db, token, client=f"c{n}", settings=WebSettings()).status)

    threads = [threading.Thread(target=redeem, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    engine.dispose()
    assert sorted(results) == ["invalid", "invalid", "invalid", "ok"]


@pytest.mark.attack
async def test_failed_logins_are_rate_limited(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    spent = _issue(home, ttl_s=3600)
    async with browser(home) as client:
        assert (await client.get(f"/login?token={spent}")).status_code == 303
        client.cookies.clear()
        for n in range(10):
            resp = await client.get(f"/login?token=wrong-guess-number-{n:02d}-" + "x" * 20)
            assert resp.status_code == 401
        for bad in ("wrong-guess-number-10-" + "x" * 20, spent):  # a used link is no better
            locked = await client.get(f"/login?token={bad}")
            assert locked.status_code == 429, locked.text
            assert 840 <= int(locked.headers["retry-after"]) <= 900
            assert "try again in 15 minutes" in locked.text
            assert "metnos_session" not in client.cookies
    reasons = [x["reason"] for x in audit_lines(home)]
    assert reasons == ["ok"] + ["ERR_WEB_LOGIN_INVALID"] * 10 + ["ERR_WEB_LOGIN_LOCKED"] * 2
    assert all(x["decision"] == "deny" and x["sender"] == "127.0.0.1"
               for x in audit_lines(home)[1:])


@pytest.mark.attack
async def test_a_local_process_cannot_lock_the_owner_out(make_home: MakeHome) -> None:
    """On loopback every client is 127.0.0.1: failures made on purpose by another local
    process must not keep the owner's browser, holding a live link, out for 15 minutes."""
    home = make_home(lang="en")
    async with browser(home) as attacker:
        for n in range(15):
            await attacker.get(f"/login?token=deny-the-owner-{n:02d}-" + "x" * 20)
        assert (await attacker.get("/login?token=" + "y" * 40)).status_code == 429
    good = _issue(home)  # `metnos login` after the attack
    async with browser(home) as owner:
        resp = await owner.get(f"/login?token={good}")
        assert resp.status_code == 303, resp.text
        assert "metnos_session" in owner.cookies
        assert (await owner.get("/api/audit")).status_code == 200
    assert audit_lines(home)[-1]["reason"] == "ok"


async def test_the_window_slides_and_other_clients_are_not_locked(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    settings = WebSettings(login_max_failures=3, login_window_s=60)
    engine = _engine(home)
    t0 = utcnow()
    try:
        with db_session(engine) as db:
            for n in range(3):
                assert web.redeem(db, "nope", client="a", settings=settings,
                                  now=t0 + timedelta(seconds=n * 10)).status == "invalid"
            locked = web.redeem(db, "nope", client="a", settings=settings,
                                now=t0 + timedelta(seconds=30))
            assert locked.status == "locked" and locked.retry_after_s == 30
            assert web.redeem(db, "nope", client="b", settings=settings,
                              now=t0 + timedelta(seconds=30)).status == "invalid"
            after = web.redeem(db, "nope", client="a", settings=settings,
                               now=t0 + timedelta(seconds=61))
            assert after.status == "invalid"  # the oldest failure left the window
    finally:
        engine.dispose()


@pytest.mark.attack
async def test_forged_expired_and_foreign_cookies_get_401(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    engine = _engine(home)
    try:
        with db_session(engine) as db:
            old = web.redeem(db, _issue(home), client="x", now=utcnow() - timedelta(days=31),
                             settings=WebSettings()).session_secret
    finally:
        engine.dispose()
    assert old is not None
    async with browser(home) as client:
        for value in (old, "A" * 43, "forged", web.digest(old), home.token):
            client.cookies.set("metnos_session", value)
            resp = await client.get("/api/approvals")
            assert resp.status_code == 401, value
            assert resp.json()["error"]["key"] == "ERR_AUTH_SESSION_INVALID"
            page = await client.get("/")
            assert page.status_code == 401, value


async def test_wrong_bearer_is_not_replaced_by_a_good_cookie(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with browser(home) as client:
        await log_in(client, home)
        assert (await client.get("/api/approvals")).status_code == 200
        resp = await client.get("/api/approvals", headers={"Authorization": "Bearer nope"})
        assert resp.status_code == 401 and resp.json()["error"]["key"] == "ERR_AUTH_INVALID"
        bearer = await client.get("/api/approvals", headers=home.auth())
        assert bearer.status_code == 200


async def test_a_new_login_ends_the_browsers_previous_session(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with browser(home) as client:
        first = await log_in(client, home)
        second = await log_in(client, home)
        assert first != second
        client.cookies.set("metnos_session", first)
        assert (await client.get("/api/audit")).status_code == 401
        client.cookies.set("metnos_session", second)
        assert (await client.get("/api/audit")).status_code == 200


async def test_logout_button_and_italian_pages(make_home: MakeHome) -> None:
    home = make_home(lang="it")
    async with browser(home, headers={"Accept-Language": "it-IT,it;q=0.9"}) as client:
        bad = await client.get("/login?token=" + "B" * 43)
        assert bad.status_code == 401 and 'lang="it"' in bad.text
        assert "Link di accesso non valido" in bad.text
        await log_in(client, home)
        out = await client.post("/api/logout", headers={
            "Origin": ORIGIN, "Accept": "text/html,application/xhtml+xml",
            "Content-Type": "application/x-www-form-urlencoded"}, content=b"")
        assert out.status_code == 200 and "Sei uscito" in out.text
        assert "metnos_session" not in client.cookies
        assert (await client.get("/")).status_code == 401


async def test_english_request_on_an_italian_instance(make_home: MakeHome) -> None:
    home = make_home(lang="it")
    async with browser(home, headers={"Accept-Language": "en"}) as client:
        bad = await client.get("/login")
        assert bad.status_code == 401 and "Login link not valid" in bad.text
    assert audit_lines(home) == []  # no token, nothing guessed: not a failure


def test_cli_prints_a_link_that_is_stored_as_a_digest(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    result = runner.invoke(cli, [])
    assert result.exit_code == 0, result.output
    first, url, hint = result.stdout.strip().splitlines()
    assert first == "Open this link in your browser within 10 minutes; it works only once:"
    assert hint.endswith("asks for its own password: metnos ui")
    match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/login\?token=([A-Za-z0-9_-]{43})", url)
    assert match and int(match.group(1)) == home.settings.gateway.port
    data = json.loads(runner.invoke(cli, ["--json"]).stdout)
    assert data["expires_in_s"] == 600 and data["url"] != url
    engine = _engine(home)
    try:
        with db_session(engine) as db:
            digests = {row.token_digest for row in db.exec(select(LoginToken))}
    finally:
        engine.dispose()
    assert digests == {web.digest(match.group(2)), web.digest(data["url"].split("token=")[1])}


def test_cli_with_the_database_down_says_so(make_home: MakeHome,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from metnos.ground.settings import get_settings
    from tests.support.pg import free_port

    make_home(lang="en")
    monkeypatch.setenv("METNOS_DATABASE_URL",
                       f"postgresql://metnos:x@127.0.0.1:{free_port()}/metnos")
    get_settings.cache_clear()
    result = runner.invoke(cli, [])
    assert result.exit_code == 1
    assert "the database is not reachable" in result.stderr
    assert "metnos serve" in result.stderr and "Traceback" not in result.output


def test_install_is_idempotent_and_the_page_at_root_is_the_web_chat() -> None:
    from fastapi import FastAPI
    from starlette.routing import Match

    from metnos.faces.gateway.app import create_app
    from metnos.faces.gateway.routes import login as login_routes
    from metnos.faces.gateway.routes import web as web_routes

    def serving(app: FastAPI, path: str) -> list[object]:
        scope = {"type": "http", "method": "GET", "path": path, "root_path": "", "headers": []}
        return [r for r in app.router.routes if r.matches(scope)[0] == Match.FULL]

    bare = FastAPI()
    login_routes.install(bare)
    login_routes.install(bare)  # idempotent
    assert len(serving(bare, "/login")) == 1 and serving(bare, "/") == []
    assert len(serving(create_app(), "/")) == 1  # one page at `/`: the web chat's
    assert [r.path for r in web_routes.router.routes if getattr(r, "path", "") == "/"] == ["/"]
"""pytest plugin: a real, initialised METNOS_HOME and a gateway on it.

- `make_home(llm=None, autonomy="Supervised", lang="it")` (function): an initialised home in a
  temp dir on a fresh database of the test PostgreSQL, optionally pointed at a scripted LLM
  server; returns a `Home`. The real `metnos init` runs once per test process for each
  language on the shipped resources, into a template home; each test gets a copy of it with
  an owner token of its own (init signs 19 executors and seeds the i18n store: ~1 s a home).
- `scripted_llm` (function): a started `ScriptedLLM` (OpenAI-compatible, loopback).
- `gateway_client(home, prefect=True)` (async context manager factory): the FastAPI app with
  its lifespan, reached through httpx with the owner token; Prefect's turn flow as runner
  unless `prefect=False`.
- `engine` (function): an Engine on the database of the module's own `home` fixture.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from asgi_lifespan import LifespanManager
from sqlalchemy import Engine

from metnos.faces.home import initialise
from metnos.ground import durable
from metnos.ground.db.engine import database_url, make_engine, uses_embedded
from metnos.ground.settings import Settings, get_settings
from metnos.testing.llm_server import ScriptedLLM
from tests.support.pg import TestPostgres

if TYPE_CHECKING:
    from metnos.faces.wiring import Edges

GATEWAY_BASE = "http://127.0.0.1:42618"


@dataclass
class Home:
    settings: Settings
    token: str

    @property
    def path(self) -> Path:
        return self.settings.home

    @property
    def workspace(self) -> Path:
        return self.settings.workspace

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


MakeHome = Callable[..., Home]


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def stopped_base() -> Iterator[str]:
    """The address of a model server that was started, then stopped: its port is closed."""
    server = ScriptedLLM().start()
    base = server.api_base
    server.stop()
    yield base


@pytest.fixture
def make_home(tmp_path: Path, pg_server: TestPostgres, monkeypatch: pytest.MonkeyPatch,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeHome]:
    def make(llm: ScriptedLLM | None = None, autonomy: str = "Supervised",
             lang: str = "it", **env: str) -> Home:
        home = tmp_path / "home"
        monkeypatch.setenv("METNOS_HOME", str(home))
        monkeypatch.setenv("METNOS_LANG", lang)
        monkeypatch.setenv("METNOS_POLICY_AUTONOMY", autonomy)
        # its tables copied from a template: `initialise` below finds them current
        monkeypatch.setenv("METNOS_DATABASE_URL",
                           pg_server.url(pg_server.fresh_database(tables=True)))
        # the test session's Prefect server has its own database: init must not create one
        monkeypatch.setenv("PREFECT_SERVER_DATABASE_CONNECTION_URL", "postgresql+asyncpg://test/unused")
        for name in ("METNOS_LLM_MODEL", "METNOS_LLM_API_BASE", "METNOS_LLM_API_KEY"):
            monkeypatch.delenv(name, raising=False)
        if llm is not None:
            monkeypatch.setenv("METNOS_LLM_MODEL", "openai/scripted")
            monkeypatch.setenv("METNOS_LLM_API_BASE", llm.api_base)
            monkeypatch.setenv("METNOS_LLM_API_KEY", "sk-test")
        # a home without a catalog stays one (the Tutor steps aside) unless a test asks for
        # the compile at start (issue 27): no test pays for a compile it does not use
        monkeypatch.setenv("METNOS_TUTOR_READ_AT_START", "false")
        # the pre-check's 2 s window is a household machine's; a loaded test machine can take
        # longer, and a pre-check that steps aside fails a test of what the Tutor says (seen
        # in a full run): the longest window the setting allows
        monkeypatch.setenv("METNOS_TUTOR_WINDOW_MS", "10000")
        # a gateway stopped at the end of a test with a turn still waiting for its approval
        # waits out the whole drain window (30 s by default) before recording it interrupted:
        # a short one here, the tests of the drain set their own
        monkeypatch.setenv("METNOS_GATEWAY_DRAIN_S", "5")
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        settings = get_settings()
        template = _template_home(settings, tmp_path_factory, monkeypatch)
        settings = get_settings()  # the one the test's code reads, as before
        if template is None:
            initialise(settings)
        else:
            shutil.copytree(template, settings.home, symlinks=True, copy_function=shutil.copy)
            settings.owner_token_path.unlink()
            durable.write_secret(settings.owner_token_path, secrets.token_urlsafe(32))
        return Home(settings, settings.owner_token())

    yield make
    get_settings.cache_clear()


_templates: dict[str, Path] = {}  # what init depends on -> an initialised home, per process


def _template_home(settings: Settings, tmp_path_factory: pytest.TempPathFactory,
                   monkeypatch: pytest.MonkeyPatch) -> Path | None:
    """The template home for `settings` (initialised now if new), or None where the home
    must be initialised itself: it exists already (a second `make_home` in one test), its
    database is the embedded one or its resources are a test's own copy. Init writes the
    same files for the same language and i18n settings (SPEC §1: every path in the home)."""
    if settings.home.exists() or uses_embedded(settings) or settings.i18n.resources_dir:
        return None
    key = f"{settings.lang}|{settings.i18n.model_dump_json()}"
    if key not in _templates:
        template = tmp_path_factory.mktemp("template_home") / "home"
        with monkeypatch.context() as patch:
            patch.setenv("METNOS_HOME", str(template))
            get_settings.cache_clear()
            initialise(get_settings())
        get_settings.cache_clear()
        _templates[key] = template
    return _templates[key]


@asynccontextmanager
async def gateway_client(home: Home, *, prefect: bool = True, edges: Edges | None = None,
                         **client_kwargs: Any) -> AsyncIterator[httpx.AsyncClient]:
    from metnos.faces.gateway.app import create_app

    runner = resumer = None
    if prefect:
        from flows.turn import resume_approval, run_turn

        runner, resumer = run_turn, resume_approval
    app = create_app(home.settings, runner=runner, resumer=resumer, edges=edges)
    async with LifespanManager(app, startup_timeout=60, shutdown_timeout=60) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        headers = {**home.auth(), **client_kwargs.pop("headers", {})}
        async with httpx.AsyncClient(transport=transport, base_url=GATEWAY_BASE,
                                     headers=headers, timeout=120, **client_kwargs) as client:
            client.app = app  # type: ignore[attr-defined]
            yield client


@pytest.fixture
def served(make_home: MakeHome, scripted_llm: ScriptedLLM) -> Iterator[Home]:
    """An English home with a scripted LLM, its gateway on a free loopback port: for CLI
    commands, which reach it over real HTTP."""
    from tests.support.pg import free_port

    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    with served_gateway(home):
        yield home


@contextmanager
def served_app(app: Any, port: int, sockets: list[Any] | None = None) -> Iterator[str]:
    """`app` under uvicorn on 127.0.0.1:`port` (or on `sockets`, bound already), in a
    thread; yields its loopback base URL."""
    import threading
    import time

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "gateway did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


@contextmanager
def served_gateway(home: Home) -> Iterator[Home]:
    """The gateway on its configured loopback port (uvicorn in a thread, plain runner): for
    CLI commands, which reach it over real HTTP. Give the home a free `METNOS_GATEWAY_PORT`."""
    from metnos.faces.gateway.app import create_app

    with served_app(create_app(home.settings), home.settings.gateway.port):
        yield home


@pytest.fixture
def engine(home: Home) -> Iterator[Engine]:
    """An Engine on the database of `home` (the requesting module's fixture), disposed after."""
    made = make_engine(database_url(home.settings))
    yield made
    made.dispose()

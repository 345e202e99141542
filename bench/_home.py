"""The Metnos home a bench script runs against: a database of its own in the embedded
PostgreSQL that `tests.support.services` started, the settings read from the environment, and
the Tutor's catalog compiled, as `metnos init` leaves a home."""

from __future__ import annotations

import os
from pathlib import Path

from metnos.ground.db.embedded import EmbeddedPostgres
from metnos.ground.settings import Settings


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_home(root: Path, database: str, **env: str) -> Settings:
    """Initialise a home under `root` on a fresh `database`; `env` adds METNOS_* variables."""
    pg = EmbeddedPostgres(Path(os.environ["METNOS_TEST_PG_DATA"]),
                          int(os.environ["METNOS_TEST_PG_PORT"]),
                          Path(os.environ["METNOS_TEST_PG_PASSWORD_FILE"]))
    pg.ensure_database(database)
    os.environ.update({
        "METNOS_HOME": str(root / "home"), "METNOS_LANG": "en",
        "METNOS_DATABASE_URL": pg.url(database),
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": "postgresql+asyncpg://bench/unused", **env,
    })
    from metnos.faces.home import initialise
    from metnos.features.tutor.compile import compile_catalog
    from metnos.ground.settings import get_settings

    get_settings.cache_clear()
    settings = get_settings()
    initialise(settings)
    # as `metnos init` leaves a home: with the Tutor's catalog, or the gateway compiles it in
    # the background while the bench measures (half of its CPU for the first minutes)
    compile_catalog(settings.home)
    return settings


def llm_env(api_base: str, autonomy: str) -> dict[str, str]:
    """A scripted model at `api_base`, and a rate limit hundreds of turns a minute never hit."""
    return {"METNOS_LLM_MODEL": "openai/scripted", "METNOS_LLM_API_BASE": api_base,
            "METNOS_LLM_API_KEY": "sk-bench", "METNOS_POLICY_AUTONOMY": autonomy,
            "METNOS_POLICY_MAX_ACTIONS_PER_HOUR": "1000000"}

"""Where the databases are: the embedded cluster and the URLs of Metnos's and Prefect's.

Apart from `engine.py` (SQLAlchemy) so that a process that only starts and stops the cluster,
`metnos serve`'s supervisor, never loads a database driver; `engine.py` re-exports these.
"""

from __future__ import annotations

import os

from metnos.ground.db.embedded import EmbeddedPostgres
from metnos.ground.settings import Settings

PREFECT_URL_ENV = "PREFECT_SERVER_DATABASE_CONNECTION_URL"


def embedded_postgres(settings: Settings) -> EmbeddedPostgres:
    """The instance's embedded cluster: METNOS_HOME/pg, password in secrets/pg.password."""
    return EmbeddedPostgres(settings.pg_dir, settings.database.port,
                            settings.secrets_dir / "pg.password")


def database_url(settings: Settings) -> str:
    """URL of Metnos's own database (external when `database.url` is set)."""
    if settings.database.url:
        return with_psycopg(settings.database.url)
    return embedded_postgres(settings).url(settings.database.name)


def prefect_database_url(settings: Settings) -> str:
    """URL the Prefect server should use (`postgresql+asyncpg://...`)."""
    external = os.environ.get(PREFECT_URL_ENV)
    if external:
        return external
    return embedded_postgres(settings).url(settings.database.prefect_name, driver="asyncpg")


def uses_embedded(settings: Settings) -> bool:
    """True when at least one of the two databases lives in the embedded cluster."""
    return not (settings.database.url and os.environ.get(PREFECT_URL_ENV))


def with_psycopg(url: str) -> str:
    """`postgresql://` (which SQLAlchemy maps to psycopg2, not installed) → psycopg 3."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url

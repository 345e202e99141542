"""The database layer: the embedded PostgreSQL (`embedded`), URLs, engine and sessions
(`engine`), Metnos's tables and their helpers (`models`).

Import the submodules directly; this package imports nothing, so `python -m
metnos.ground.db.embedded` runs cleanly and nothing connects at import time.
"""

"""Rows of the memory tables as JSON, for the moves (`metnos.features.mnestoma.moves`): read exactly
some columns of some rows (by primary key), write them back, and the deterministic `dump`.

A snapshot is `{table: {"columns": [pk..., changed...], "rows": [[...]], "absent": [[pk]]}}`:
`absent` lists the rows that did not exist. Values are JSON: a datetime is UTC ISO text with
microseconds and offset, so it round-trips exactly; a float is written as Python's repr.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Connection,
    DateTime,
    Engine,
    Table,
    delete,
    insert,
    select,
    text,
    update,
)
from sqlmodel import SQLModel

MEMORY_TABLES = ("mnest", "proto_mnest", "use_clock", "executor_use", "trace")

Snapshot = dict[str, dict[str, Any]]
Shape = dict[str, tuple[list[str], list[tuple[Any, ...]]]]  # table → (columns, keys)


@dataclass(frozen=True)
class RowChange:
    """Set `values` on the row of `table` with primary key `key` (created when missing, with
    the columns' defaults); `values=None` deletes it."""

    table: str
    key: tuple[Any, ...]
    values: dict[str, Any] | None


def dump(engine: Engine) -> bytes:
    """The memory tables, every column, rows ordered by primary key, one canonical JSON line
    each: equal bytes mean equal contents."""
    out: list[str] = []
    with engine.connect() as conn:
        for name in MEMORY_TABLES:
            table = table_of(name)
            out.append(f"# {name}")
            for row in conn.execute(select(table).order_by(*table.primary_key.columns)):
                out.append(canonical({k: encode(v) for k, v in row._mapping.items()}))
    return ("\n".join(out) + "\n").encode("utf-8")



def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))



def encode(value: Any) -> Any:
    """A column value as JSON: a datetime as UTC ISO with microseconds and offset."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="microseconds")
    return value



def weights_moved(found: Iterable[Sequence[Any]]) -> tuple[Snapshot, Snapshot]:
    """The snapshots of a bulk change of mnest weights from its (src, dst, old, new) rows."""
    rows = sorted(tuple(r) for r in found)
    columns = ["src", "dst", "weight"]
    return ({"mnest": {"columns": columns, "absent": [],
                       "rows": [[s, d, float(b)] for s, d, b, _ in rows]}},
            {"mnest": {"columns": columns, "absent": [],
                       "rows": [[s, d, float(a)] for s, d, _, a in rows]}})


def keys_of(snapshot: Snapshot) -> set[tuple[str, tuple[Any, ...]]]:
    """(table, primary key) of every row a snapshot names."""
    out: set[tuple[str, tuple[Any, ...]]] = set()
    for name, part in snapshot.items():
        width = len(table_of(name).primary_key.columns)
        out.update((name, tuple(r[:width])) for r in part["rows"])
        out.update((name, tuple(k)) for k in part["absent"])
    return out



def restore(conn: Connection, snapshot: Snapshot) -> None:
    """Write `snapshot` back: its rows column for column, its absent rows deleted."""
    for name, part in snapshot.items():
        table = table_of(name)
        pk = [c.name for c in table.primary_key.columns]
        columns = part["columns"]
        full = set(columns) == {c.name for c in table.c}
        for key in part["absent"]:
            conn.execute(delete(table).where(*_match(table, pk, key)))
        for raw in part["rows"]:
            values = _decode(table, dict(zip(columns, raw, strict=True)))
            key = [values[c] for c in pk]
            done = conn.execute(update(table).where(*_match(table, pk, key)).values(
                {c: v for c, v in values.items() if c not in pk}))
            if done.rowcount == 0 and full:
                conn.execute(insert(table).values(values))



def shape_of_changes(changes: Iterable[RowChange]) -> Shape:
    """table → (columns to snapshot: primary key first, then what changes; keys touched)."""
    found: dict[str, tuple[set[str], list[tuple[Any, ...]]]] = {}
    for change in changes:
        table = table_of(change.table)
        cols, keys = found.setdefault(change.table, (set(), []))
        cols.update(c.name for c in table.c) if change.values is None else cols.update(
            change.values)
        if change.key not in keys:
            keys.append(change.key)
    shape: Shape = {}
    for name, (cols, keys) in found.items():
        pk = [c.name for c in table_of(name).primary_key.columns]
        shape[name] = ([*pk, *sorted(cols - set(pk))], keys)
    return shape



def read(conn: Connection, shape: Shape) -> Snapshot:
    """The rows of `shape` as they are now: one query a table, joined to the keys (unnest)."""
    out: Snapshot = {}
    for name, (columns, keys) in shape.items():
        pk = list(table_of(name).primary_key.columns)
        width = len(pk)
        arrays = ", ".join(f"CAST(:k{i} AS {c.type.compile(dialect=conn.dialect)}[])"
                           for i, c in enumerate(pk))
        on = " AND ".join(f't."{c.name}" = k.k{i}' for i, c in enumerate(pk))
        found = conn.execute(text(
            f'SELECT {", ".join(f"t.{_quote(c)}" for c in columns)} FROM {_quote(name)} AS t '
            f'JOIN unnest({arrays}) AS k({", ".join(f"k{i}" for i in range(width))}) ON {on}'),
            {f"k{i}": [k[i] for k in keys] for i in range(width)})
        seen = {tuple(row[:width]): [encode(v) for v in row] for row in found}
        rows = [seen[tuple(k)] for k in keys if tuple(k) in seen]
        absent = [list(k) for k in keys if tuple(k) not in seen]
        out[name] = {"columns": columns, "rows": rows, "absent": absent}
    return out


def _quote(identifier: str) -> str:
    """A column or table name of our own metadata, quoted."""
    return '"' + identifier.replace('"', '""') + '"'


def change(conn: Connection, change: RowChange) -> None:
    table = table_of(change.table)
    pk = [c.name for c in table.primary_key.columns]
    where = _match(table, pk, list(change.key))
    if change.values is None:
        conn.execute(delete(table).where(*where))
        return
    if conn.execute(update(table).where(*where).values(change.values)).rowcount == 0:
        conn.execute(insert(table).values({**dict(zip(pk, change.key, strict=True)),
                                           **change.values}))



def _match(table: Table, pk: list[str], key: Sequence[Any]) -> list[Any]:
    return [table.c[c] == v for c, v in zip(pk, key, strict=True)]



def _decode(table: Table, values: dict[str, Any]) -> dict[str, Any]:
    """JSON values back to column values (ISO text to datetimes)."""
    out = dict(values)
    for name, value in values.items():
        if isinstance(value, str) and isinstance(table.c[name].type, DateTime):
            out[name] = datetime.fromisoformat(value)
    return out



def table_of(name: str) -> Table:
    return SQLModel.metadata.tables[name]

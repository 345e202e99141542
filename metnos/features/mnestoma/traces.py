"""Traces: the communities of the mnestoma, found by modularity (SPEC §7.4, arch §10 "Tracce").

`detect` reads the mnestoma as an undirected weighted graph (A→B and B→A summed, mnests of
weight 0 left out, self hand-offs kept as loops), partitions it with networkx's Louvain
method (`seed` makes it deterministic) and stores one `Trace` row per community under a new
`generation`, with the partition's modularity. Every executor that was ever invoked
(`ExecutorUse`) is a node, so one with no hand-off yet is a trace of its own: singletons are
never dropped. A trace's label names its three heaviest executors by weighted degree.
`current` is the newest generation; `due` says whether a new detection is due (weekly by
default, `[evolution] traces_every_days`). Each detection leaves one audit line; one on an
empty mnestoma stores nothing, so it stays due.

Traces route the model's tool list (`metnos.features.mnestoma.routing`) and keep the introvert steps
inside one community (`metnos.features.mnestoma.introvert`): no fusion across traces.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, insert
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from metnos.features.mnestoma.models import ExecutorUse, Mnest, Trace
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import utcnow
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import AuditLog, open_audit_log

if TYPE_CHECKING:  # loaded by a detection, not by every turn that reads the current traces
    import networkx as nx

AUDIT_ACTION = "traces_detect"
LABEL_SIZE = 3  # executors named in a trace's label
_SEP = " · "


def graph(engine: Engine) -> nx.Graph:
    """The mnestoma as an undirected weighted graph (one bulk read of three columns)."""
    import networkx as nx

    g: nx.Graph = nx.Graph()
    with engine.connect() as conn:
        rows = conn.execute(select(col(Mnest.src), col(Mnest.dst), col(Mnest.weight))
                            .where(col(Mnest.weight) > 0)).all()
        g.add_nodes_from(name for (name,) in conn.execute(select(col(ExecutorUse.name))))
    for src, dst, weight in rows:
        if g.has_edge(src, dst):
            g[src][dst]["weight"] += float(weight)
        else:
            g.add_edge(src, dst, weight=float(weight))
    return g


def partition(g: nx.Graph, seed: int = 0) -> tuple[list[set[str]], float]:
    """Louvain communities of `g` and their modularity. Isolated nodes are each their own
    community without running Louvain over them (it would leave them alone anyway, and
    they add nothing to the modularity): on 10k executors with few hand-offs that is most
    of the time saved."""
    import networkx as nx

    alone = [{n} for n in sorted(g.nodes) if g.degree(n) == 0]
    linked = g.subgraph(n for n in g.nodes if g.degree(n) > 0)
    if linked.number_of_nodes() == 0:
        return alone, 0.0
    communities = [set(c) for c in nx.community.louvain_communities(linked, weight="weight",
                                                                     seed=seed)]
    if linked.size(weight="weight") <= 0:
        return communities + alone, 0.0
    modularity = float(nx.community.modularity(linked, communities, weight="weight"))
    return communities + alone, modularity


def internal_weights(g: nx.Graph, communities: list[set[str]]) -> list[float]:
    """The sum of the weights of each community's internal edges (one pass over the edges)."""
    index = {n: i for i, members in enumerate(communities) for n in members}
    sums = [0.0] * len(communities)
    for a, b, weight in g.edges(data="weight", default=0.0):
        if index[a] == index[b]:
            sums[index[a]] += float(weight)
    return sums


def detect(engine: Engine, settings: Settings, *, seed: int = 0,
           audit: AuditLog | None = None) -> list[Trace]:
    """Detect the traces anew: one `Trace` row per community under a new generation (the
    heaviest first), and one audit line (`audit`, or the instance's log from `settings`)."""
    g = graph(engine)
    communities, modularity = partition(g, seed)
    degree = dict(g.degree(weight="weight"))
    weights = internal_weights(g, communities)
    rows: list[dict[str, Any]] = []
    with db_session(engine) as db:
        last = db.exec(select(func.max(col(Trace.generation)))).one()
        generation = int(last or 0) + 1
        for members, weight in zip(communities, weights, strict=True):
            ranked = sorted(members, key=lambda n: (-degree.get(n, 0.0), n))
            rows.append({"generation": generation, "label": _SEP.join(ranked[:LABEL_SIZE]),
                         "members": ranked, "weight": weight, "modularity": modularity,
                         "detected_at": utcnow()})
        if rows:  # one bulk statement of plain rows: thousands of singletons at scale
            db.execute(insert(Trace), rows)
    system_audit(settings, audit, AUDIT_ACTION, generation=generation, traces=len(rows),
           modularity=round(modularity, 6), nodes=g.number_of_nodes(), edges=g.number_of_edges())
    return in_session(engine, current) if rows else []


def current(db: Session) -> list[Trace]:
    """The traces of the newest generation, the heaviest first ([] before any detection)."""
    newest = select(func.max(col(Trace.generation))).scalar_subquery()
    return list(db.exec(select(Trace).where(col(Trace.generation) == newest)
                        .order_by(col(Trace.weight).desc(), col(Trace.label))).all())


def due(db: Session, settings: Settings, now: datetime) -> bool:
    """True when no traces exist yet, or the newest are older than `traces_every_days`."""
    last = db.exec(select(func.max(col(Trace.detected_at)))).one()
    if last is None:
        return True
    return bool(now - last >= timedelta(days=settings.evolution.traces_every_days))


def trace_of(traces: Iterable[Trace]) -> dict[str, int]:
    """Executor → the index of its trace in `traces`."""
    return {name: index for index, trace in enumerate(traces) for name in trace.members}


def system_audit(settings: Settings, audit: AuditLog | None, action: str,
                 **args: object) -> None:
    """One audit line of Metnos's own (a detection, a night's introvert run), on `audit` or
    on the instance's log opened for it."""
    log = audit if audit is not None else open_audit_log(settings)
    try:
        log.append(sender="metnos", channel="system", action=action, decision="info",
                   reason="ok", outcome="done", args=args)
    finally:
        if audit is None:
            log.close()

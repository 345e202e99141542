"""The layering of SPEC §0: `metnos/` never imports prefect, flows or tasks; and no package of
`metnos/` joins an import loop (issue 28; the rings themselves: `.importlinter`)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from collections.abc import Mapping, Set
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("prefect", "flows", "tasks", "deployments")
# the package's modules; metnos/resources/ is data (its executors run in their sandbox)
MODULES = sorted(p for p in (ROOT / "metnos").rglob("*.py")
                 if p.relative_to(ROOT / "metnos").parts[0] != "resources")


def _imports(path: Path, names: bool = False) -> list[tuple[int, str]]:
    """The modules `path` imports (with `names`: `from a import b` gives `a.b` too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            if names:
                found.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names)
    return found


@pytest.mark.parametrize("path", MODULES,
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_metnos_module_does_not_import_the_orchestrator(path: Path) -> None:
    bad = [f"line {line}: import {name}" for line, name in _imports(path)
           if name.split(".")[0] in FORBIDDEN]
    assert not bad, f"{path.relative_to(ROOT)} imports the orchestration layer: {bad}"


def test_importing_every_metnos_module_loads_no_prefect() -> None:
    """Transitively, too: import them all in a fresh interpreter and look at sys.modules."""
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in MODULES if p.name != "__main__.py"
    )
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            f"{FORBIDDEN!r})\n"
            "print(','.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "", f"metnos/ pulled in: {out.stdout.strip()}"


def test_flows_stay_thin() -> None:
    for path in (ROOT / "flows").glob("*.py"):
        lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
        assert len(lines) < 80, f"{path.name}: {len(lines)} lines; domain work belongs in metnos/"

RINGS = ("ground", "mechanisms", "features", "faces")  # the ring folders, skipped


def _package(module: str) -> str | None:
    """`metnos.ground.db.engine` -> `db`; a module outside metnos/ -> None."""
    parts = module.split(".")
    if parts[0] != "metnos" or len(parts) < 2:
        return None
    return parts[2] if parts[1] in RINGS and len(parts) > 2 else parts[1]


def _package_graph() -> dict[str, set[str]]:
    """Package -> the packages it imports."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in (ROOT / "metnos").rglob("*.py"):
        here = _package(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = ([f"metnos.{a.name}" for a in node.names] if node.module == "metnos"
                           else [node.module])
            graph[str(here)].update(p for t in targets if (p := _package(t)) not in (None, here))
    return graph


def _loops(graph: Mapping[str, Set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, set()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = {stack.pop()}
            while node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_loops_are_found() -> None:
    graph = {"db": {"errors"}, "errors": {"i18n"}, "i18n": {"errors"}, "turns": {"db"}}
    assert _loops(graph) == [{"errors", "i18n"}]
    assert _loops({"db": {"errors"}, "turns": {"db"}}) == []


def test_no_package_is_in_an_import_loop() -> None:
    """Every import counts (in a function or under TYPE_CHECKING too, as lint-imports counts
    them), and the packages of metnos/ import one another without a loop."""
    assert _loops(_package_graph()) == []


def test_the_app_brings_every_features_tables() -> None:
    """A fresh interpreter (no test plugin has imported `metnos.faces.registry`): the gateway's app
    already has every feature's tables."""
    code = ("import metnos.faces.gateway.app\n"
            "from sqlmodel import SQLModel\n"
            "before = set(SQLModel.metadata.tables)\n"
            "import metnos.faces.registry\n"
            "print(before == set(SQLModel.metadata.tables) and len(before) > 20)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True"


# A face (the gateway) calls the use-cases below it; nothing below calls a face. The one other
# face that does, `metnos-prompts check`, hands the gateway's pages to the translation
# workbench (`metnos.features.languages`); an entry here that no longer imports the gateway fails
# too.
GATEWAY_IMPORTERS_LEFT = {"metnos/faces/cli/prompts.py"}


def test_only_the_gateway_imports_the_gateway() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "metnos").rglob("*.py")):
        where = str(path.relative_to(ROOT))
        if where.startswith("metnos/faces/gateway/"):
            continue
        names = [f"line {line}: import {name}" for line, name in _imports(path, names=True)
                 if name == "metnos.faces.gateway" or name.startswith("metnos.faces.gateway.")]
        if names:
            found[where] = names
    assert set(found) == GATEWAY_IMPORTERS_LEFT, (
        f"imports of metnos.faces.gateway outside it: "
        f"{ {k: v for k, v in found.items() if k not in GATEWAY_IMPORTERS_LEFT} }; "
        f"no longer importing it (drop from GATEWAY_IMPORTERS_LEFT): "
        f"{sorted(GATEWAY_IMPORTERS_LEFT - set(found))}")


# The turn service (the runtime with the features' hooks and the step checker and runner) is
# the turn ring's own: faces hold the turn handle, features the runtime's parts. Outside
# metnos/turns/ only the composition root builds it and the turn's Prefect edge runs it.
TURN_SERVICE_OUTSIDE_THE_TURN = {"metnos/faces/wiring.py", "flows/turn.py", "tasks/turn.py"}


def test_only_the_turn_ring_imports_the_turn_service() -> None:
    found = set()
    for package in ("metnos", "flows", "tasks", "deployments"):
        for path in sorted((ROOT / package).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            if not where.startswith("metnos/turns/") and any(
                    name == "metnos.turns.service.TurnService"
                    for _, name in _imports(path, names=True)):
                found.add(where)
    assert found == TURN_SERVICE_OUTSIDE_THE_TURN


# What a process loads before it does anything (issue 29): `metnos --help` and the thin
# commands load no database driver, no HTTP client and no orchestrator; a gateway without a
# bot token loads no Telegram library, and no plotting or graph library until it draws;
# `metnos serve`'s supervisor and PostgreSQL's watchdog only start, watch and stop processes:
# no database code.
AT_START = {
    "metnos.faces.cli.main": {"sqlalchemy", "sqlmodel", "psycopg", "httpx", "prefect",
                              "litellm", "aiogram", "fastapi", "hassil", "numpy"},
    "flows.gateway": {"aiogram", "matplotlib", "networkx"},
    "metnos.faces.serve.supervisor": {"sqlalchemy", "sqlmodel", "psycopg", "httpx", "prefect",
                                      "litellm", "fastapi", "numpy"},
    "metnos.faces.serve.watchdog": {"sqlalchemy", "sqlmodel", "psycopg", "httpx", "prefect",
                                    "litellm", "fastapi", "numpy"},
}


@pytest.mark.parametrize("module", sorted(AT_START))
def test_what_a_process_loads_at_start(module: str) -> None:
    code = (f"import sys, {module}\n"
            "print(','.join(sorted({m.split('.')[0] for m in sys.modules})))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = set(out.stdout.strip().split(","))
    assert not loaded & AT_START[module], f"{module} loads {sorted(loaded & AT_START[module])}"

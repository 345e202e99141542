"""The layering of SPEC §0: `metnos/` never imports prefect, flows or tasks."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("prefect", "flows", "tasks", "deployments")


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


@pytest.mark.parametrize("path", sorted((ROOT / "metnos").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_metnos_module_does_not_import_the_orchestrator(path: Path) -> None:
    bad = [f"line {line}: import {name}" for line, name in _imports(path)
           if name.split(".")[0] in FORBIDDEN]
    assert not bad, f"{path.relative_to(ROOT)} imports the orchestration layer: {bad}"


def test_importing_every_metnos_module_loads_no_prefect() -> None:
    """Transitively, too: import them all in a fresh interpreter and look at sys.modules."""
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "metnos").rglob("*.py")
        if p.name != "__main__.py"
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


# A face (the gateway) calls the use-cases below it; nothing below calls a face. Until the
# translation workbench leaves `metnos/i18n/` (issue 28, the `layers` branch), it renders the
# gateway's pages; an entry here that no longer imports the gateway fails too.
GATEWAY_IMPORTERS_LEFT = {"metnos/i18n/surfaces.py"}


def test_only_the_gateway_imports_the_gateway() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "metnos").rglob("*.py")):
        where = str(path.relative_to(ROOT))
        if where.startswith("metnos/gateway/"):
            continue
        names = [f"line {line}: import {name}" for line, name in _imports(path, names=True)
                 if name == "metnos.gateway" or name.startswith("metnos.gateway.")]
        if names:
            found[where] = names
    assert set(found) == GATEWAY_IMPORTERS_LEFT, (
        f"imports of metnos.gateway outside it: "
        f"{ {k: v for k, v in found.items() if k not in GATEWAY_IMPORTERS_LEFT} }; "
        f"no longer importing it (drop from GATEWAY_IMPORTERS_LEFT): "
        f"{sorted(GATEWAY_IMPORTERS_LEFT - set(found))}")

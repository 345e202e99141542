"""The security page's autonomy table follows `policy.decide` (issue 27, build point 4).

Each row of the table in docs/en/security.md and docs/it/sicurezza.md names built-in tools
in backticks; for each of them and each level, the cell must be what `policy.decide` says for
an owner's step in a turn that read no outside text, in a conversation that does not ask for
everything (the shipped defaults), with the tool's manifest and `metnos.mechanisms.policy.routine`.
A change to the decision, a manifest or the routine table that the page does not follow
fails here, and the page's risk/changes/undo columns must match the manifests too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from metnos.mechanisms.executors.manifest import Manifest
from metnos.mechanisms.policy import AUTONOMY_LEVELS, decide
from metnos.mechanisms.policy.routine import routine_change
from tests.security.paths_calls import repo_manifests

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"en": ROOT / "docs/en/security.md", "it": ROOT / "docs/it/sicurezza.md"}
WORDS = {
    "en": {("allow", False): "runs", ("allow", True): "runs, with Undo", ("ask", False): "asks",
           ("deny", False): "refused", "low": "low", "medium": "medium", "high": "high",
           True: "yes", False: "no"},
    "it": {("allow", False): "esegue", ("allow", True): "esegue, con Annulla",
           ("ask", False): "chiede", ("deny", False): "rifiuta", "low": "basso",
           "medium": "medio", "high": "alto", True: "sì", False: "no"},
}
MANIFESTS = {m.name: m for m in repo_manifests()}


def _table(lang: str) -> list[list[str]]:
    text = PAGES[lang].read_text(encoding="utf-8")
    header = "| ReadOnly | Supervised | Full |"
    lines = text[text.index(header):].splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _cell(lang: str, m: Manifest, autonomy: str) -> str:
    d = decide(risk=m.risk, side_effects=m.side_effects, reversible=m.reversible,
               autonomy=autonomy, sandbox_ok=True, network=m.sandbox.network,
               routine=routine_change(m, {}))
    return WORDS[lang][(d.verdict, d.key == "MSG_POLICY_ALLOWED_REVERSIBLE")]


@pytest.mark.parametrize("lang", sorted(PAGES))
def test_the_table_is_what_policy_decide_says(lang: str) -> None:
    words = WORDS[lang]
    named: set[str] = set()
    rows = _table(lang)
    assert rows, "no autonomy table"
    for row in rows:
        tools = re.findall(r"`([a-z_]+)`", row[0].split("(")[0])
        assert tools, row
        for tool in tools:
            m = MANIFESTS[tool]
            named.add(tool)
            assert row[1:4] == [words[m.risk], words[m.side_effects], words[m.reversible]], (
                tool, row)
            assert row[4:7] == [_cell(lang, m, level) for level in AUTONOMY_LEVELS], (tool, row)
    missing = {n for n, m in MANIFESTS.items() if n not in named
               and n not in ("i18n_lint", "summarize", "pdf_ext")}  # helpers, not for families
    assert not missing, f"the table misses {sorted(missing)}"

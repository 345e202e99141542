"""Nightly flow: the translation sweep (SPEC §9.4, §12).

Finds stale and missing texts in every layer (prompts, tool descriptions, messages, channel
templates, the lexicon, workspace documents, planner words) and writes candidates for review;
nothing is served before a person accepts it with `metnos-prompts mark-synced`. Quality
`wise` unless the run is started with `quality="frontier"` (an explicit opt-in).
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from metnos.features.languages.admin import LAYERS
from tasks.translation import translate_layer_task, translation_status_task


@flow(name="translation-sweep", persist_result=False, retries=1, retry_delay_seconds=300)
async def translation_sweep(quality: str | None = None,
                            languages: list[str] | None = None) -> dict[str, Any]:
    logger = get_run_logger()
    logger.info("before: %s", translation_status_task())
    reports = {layer: await translate_layer_task(layer, quality, languages) for layer in LAYERS}
    totals = {key: sum(int(r[key]) for r in reports.values())
              for key in ("written", "rejected", "failed", "conflicts")}
    logger.info("sweep done: %s", totals)
    return {"layers": reports, **totals}

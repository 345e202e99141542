"""Prefect tasks of the nightly translation sweep: thin wrappers over `metnos.ground.i18n`."""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from metnos.features.languages.admin import LanguageAdmin
from metnos.features.languages.sweep import SweepReport
from metnos.features.languages.translator import LLMTranslator
from metnos.ground.settings import get_settings
from metnos.mechanisms.llm.port import LLMPort


@task(name="translation-status", cache_policy=NO_CACHE)
def translation_status_task() -> dict[str, int]:
    """How many resource × language pairs are in each state (shown in the run's logs)."""
    counts: dict[str, int] = {}
    for row in LanguageAdmin(get_settings()).status():
        counts[row.status] = counts.get(row.status, 0) + 1
    return counts


# Candidates already written for the current source are skipped, so a retry only does
# what is left: the task is idempotent.
@task(name="translate-layer", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=60)
async def translate_layer_task(layer: str, quality: str | None,
                               languages: list[str] | None) -> dict[str, Any]:
    logger = get_run_logger()
    settings = get_settings()
    tier = quality or settings.i18n.sweep_quality
    port = LLMPort.for_instance(settings)
    if tier == "wise" and port.resolve(tier) is None:  # frontier unset: an error, not a skip
        logger.warning("%s: no language model is configured; nothing translated "
                       "(`metnos-prompts status` shows what waits)", layer)
        return {**SweepReport().to_json(), "skipped": True}
    admin = LanguageAdmin(settings)
    translator = LLMTranslator(port, tier, settings.lang)
    report = await admin.sweep(translator, layers=[layer], langs=languages,
                               progress=logger.info)
    logger.info("%s: %s (model calls %s, cost %.4f USD)", layer,
                {k: v for k, v in report.to_json().items() if k != "details"},
                translator.calls, translator.cost_usd)
    return report.to_json()

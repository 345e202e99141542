"""The sweep's translator: the `translator` prompt over the LLM port (SPEC §8, §9.4).

Tier `wise` by default; `frontier` only when a person asks for it (`--quality frontier`), and
asking for it without a frontier model configured is an error, never a silent fallback.
"""

from __future__ import annotations

from typing import Literal

from metnos.ground import i18n
from metnos.ground.errors import ConfigError, LLMError
from metnos.mechanisms import prompts
from metnos.mechanisms.llm.port import LLMPort

Quality = Literal["wise", "frontier"]
QUALITIES: tuple[Quality, ...] = ("wise", "frontier")


class LLMTranslator:
    """Translates one payload per call; `label` says which tier and model wrote a candidate."""

    def __init__(self, port: LLMPort, quality: str, prompt_lang: str) -> None:
        if quality not in QUALITIES:
            raise ConfigError("ERR_LANGS_QUALITY_INVALID", quality=quality,
                              qualities=", ".join(QUALITIES))
        model = port.resolve(quality)
        if model is None:
            raise LLMError("ERR_LLM_NOT_CONFIGURED")
        self.port = port
        self.tier = quality
        self.prompt_lang = prompt_lang
        self.label = f"{quality}:{model}"
        self.cost_usd = 0.0
        self.calls = 0

    async def translate(self, kind: str, source_lang: str, target_lang: str,
                        payload: str) -> str:
        system = prompts.get(
            "translator", self.prompt_lang, kind=kind, source_lang=source_lang,
            target_lang=target_lang,
            source_name=i18n.display_name(source_lang, self.prompt_lang),
            target_name=i18n.display_name(target_lang, self.prompt_lang))
        reply = await self.port.complete(
            [{"role": "system", "content": system}, {"role": "user", "content": payload}],
            tier=self.tier)
        self.calls += 1
        self.cost_usd += reply.cost_usd
        if not reply.text:
            raise LLMError("ERR_LANGS_EMPTY_TRANSLATION")
        return reply.text

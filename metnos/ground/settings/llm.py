"""The `[llm]` settings group (`METNOS_LLM_*`): the model provider; unset, the embedded planner."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class LLMSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_LLM_")

    model: str | None = Field(
        None, description="litellm model string (e.g. ollama/qwen3:8b); unset = embedded planner."
    )
    api_base: str | None = Field(None, description="Base URL of the provider.")
    api_key: SecretStr | None = Field(None, description="API key of the provider.")
    model_fast: str | None = Field(None, description="Override for the `fast` tier.")
    model_wise: str | None = Field(None, description="Override for the `wise` tier.")
    model_frontier: str | None = Field(None, description="Model for the opt-in `frontier` tier.")
    timeout_s: float = Field(60.0, gt=0, description="Timeout of one LLM call.")
    max_attempts: int = Field(3, ge=1, le=10, description="Attempts on transient errors.")
    input_cost_per_token: float | None = Field(
        None, ge=0, description="USD per prompt token, for models litellm does not price.")
    output_cost_per_token: float | None = Field(
        None, ge=0, description="Price of a completion token in USD (see input_cost_per_token).")

"""The `[policy]` settings group (`METNOS_POLICY_*`): autonomy, approvals, rate and cost limits,
the shell allow-list and pairing."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group

Autonomy = Literal["ReadOnly", "Supervised", "Full"]


class PolicySettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_POLICY_")

    autonomy: Autonomy = Field("Supervised", description="Autonomy level of new sessions.")
    reversible_without_asking: bool = Field(
        True, description="In Supervised, an ordinary reversible change inside the workspace "
                          "(write, rename, move, archive, lists, reminders) asked for in a turn "
                          "that read no outside text runs at once and shows Undo, instead of "
                          "asking (false: it asks, as every such change did before).")
    approval_timeout_s: float = Field(
        3600.0, gt=0, le=7 * 86400,
        description="How long an approval waits for the owner before it expires.")
    max_actions_per_hour: int = Field(
        120, ge=1, description="Executor runs a user may start per clock hour, UTC (rate limit).")
    max_llm_cost_per_day_usd: float = Field(
        2.0, ge=0, description="Daily LLM spend cap, from litellm's cost figures (0 = no LLM).")
    llm_call_reserve_usd: float = Field(
        0.05, ge=0, allow_inf_nan=False,
        description="What one LLM call reserves from the daily cap until its real cost is "
                    "known (at most the cap): concurrent calls cannot overrun it together.")
    shell_allow: list[str] = Field(
        default_factory=lambda: ["ls", "cat", "head", "tail", "wc", "grep", "sort", "uniq",
                                 "cut", "tr", "du", "stat", "file", "date", "echo", "mkdir",
                                 "touch", "cp"],
        description="Commands shell_run may start (argv[0], no shell, no interpreters).")
    pairing_code_ttl_s: float = Field(3600.0, gt=0, description="Life of a pairing code.")
    pairing_max_pending: int = Field(3, ge=1, description="Pending pairing codes per channel.")
    pairing_max_failures: int = Field(
        5, ge=1, description="Wrong pairing codes before approvals are locked out.")
    pairing_lockout_s: float = Field(900.0, gt=0, description="Length of a pairing lock-out.")

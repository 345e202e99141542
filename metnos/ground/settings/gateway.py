"""The `[gateway]` settings group (`METNOS_GATEWAY_*`): where it listens, and how it stops."""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class GatewaySettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_GATEWAY_")

    host: str = Field("127.0.0.1", description="Address the gateway binds to (loopback only).")
    port: int = Field(42618, ge=1, le=65535, description="Port of the gateway.")
    max_message_chars: int = Field(
        8000, ge=1, description="Longest message a channel may send; longer ones get a 413."
    )
    allowed_hosts: list[str] = Field(
        default_factory=lambda: ["127.0.0.1", "localhost", "[::1]", "::1"],
        description="Host header values accepted (DNS-rebinding guard).",
    )
    drain_s: float = Field(
        30.0, ge=0, le=600,
        description="On a stop, how long running turns may go on finishing (new ones get "
        "503); those still running then are recorded as interrupted.",
    )
    hung_after_s: float = Field(
        60.0, ge=5, le=3600,
        description="A gateway (or Prefect server) that answers no health check for this "
        "long is hung: `metnos serve` stops it and starts it again.",
    )

    @field_validator("host")
    @classmethod
    def _loopback_only(cls, value: str) -> str:
        if value not in {"127.0.0.1", "localhost", "::1"}:
            raise ValueError("the gateway binds to loopback only (127.0.0.1, localhost or ::1)")
        return value

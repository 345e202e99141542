"""The sandbox profile an executor declares in its manifest (`[sandbox]` table).

The profile is data: policy and sandbox act on it before any executor code runs.
`metnos.mechanisms.sandbox.bwrap` turns it into a bubblewrap argv.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Host Python packages an executor may ask for (`python_packages`), bound read-only into its
# sandbox. A code constant, not a setting: an approved manifest must not bind arbitrary host
# code (e.g. `metnos` itself, with the policy and the keys' loaders).
ALLOWED_PYTHON_PACKAGES = frozenset({"lingua", "metnos.ground.i18n.lint",
                                     "metnos.features.mail.imap", "pypdf"})


class SandboxProfile(BaseModel):
    """What an executor may touch. Paths are `"workspace"` or workspace-relative folders."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read: tuple[str, ...] = Field(default=("workspace",), description="Readable roots.")
    write: tuple[str, ...] = Field(default=(), description="Writable roots.")
    network: bool = Field(default=False, description="Whether the executor may use the network.")
    egress: Literal["account", "none"] | None = Field(
        default=None, description="With `network`: the only place the network reaches. "
        "\"account\": the server of the run's account (`account` in the manifest), through one "
        "Unix socket the host forwards there; the sandbox has no network of its own "
        "(metnos.mechanisms.sandbox.egress). \"none\": nowhere (an empty network namespace), what "
        "an executor the owner signed gets when it asks for the network without an egress "
        "(metnos.mechanisms.executors.registry: the host's network is for built-ins only). None: "
        "the host's network.")
    timeout_s: float = Field(default=10.0, gt=0, le=3600, description="Wall-clock limit.")
    memory_mb: int = Field(default=256, ge=16, le=16384, description="Address-space limit.")
    trash: bool = Field(default=False, description="Whether the executor sees workspace/.trash "
                                                   "(only fs_delete, which moves files there).")
    python_packages: tuple[str, ...] = Field(
        default=(), description="Host Python packages/modules bound read-only under "
        "/home/metnos/pylib (dots become underscores); only ALLOWED_PYTHON_PACKAGES.")

    @field_validator("read", "write")
    @classmethod
    def _workspace_relative(cls, roots: tuple[str, ...]) -> tuple[str, ...]:
        for root in roots:
            if root == "workspace":
                continue
            parts = root.replace("\\", "/").split("/")
            if root.startswith(("/", "~")) or ".." in parts or not root.strip():
                raise ValueError(f"sandbox roots are 'workspace' or workspace-relative: {root!r}")
        return roots

    @model_validator(mode="after")
    def _egress_needs_network(self) -> SandboxProfile:
        if self.egress is not None and not self.network:
            raise ValueError("egress narrows the network: it needs network = true")
        return self

    @field_validator("python_packages")
    @classmethod
    def _allowed_packages(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if name not in ALLOWED_PYTHON_PACKAGES:
                allowed = ", ".join(sorted(ALLOWED_PYTHON_PACKAGES))
                raise ValueError(f"python package {name!r} is not allowed (only: {allowed})")
        if len(set(names)) != len(names):
            raise ValueError("python_packages lists a package twice")
        return names

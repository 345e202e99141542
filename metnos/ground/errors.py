"""The error tree.

Every Metnos error carries an i18n key (`SCOPE_DOMAIN_DETAIL`) and the variables of its
message, so a channel can say it in the user's language with `metnos.ground.i18n.message`; this
module imports nothing of Metnos (the ground of the ground ring).
Builtin mixins let callers catch either way (`except LookupError` also catches
`ExecutorNotFound`), as Prefect does.

Two audiences (as pydantic-ai splits them):
- `ModelRetryError`: the model asked for something malformed; the message goes back to the
  planner so it can try again (unknown tool, bad JSON, arguments that fail the manifest).
- every other `MetnosError` is terminal and shown to the user.
"""

from __future__ import annotations

from typing import Any


class MetnosError(Exception):
    """Base of all Metnos errors: an i18n key plus its variables."""

    key: str = "ERR_INTERNAL_UNEXPECTED"
    # its words already said in the reader's language (the gateway's refusal the CLI shows),
    # else `metnos.ground.i18n.message` says the key's
    text: str | None = None

    def __init__(self, key: str | None = None, **vars: Any) -> None:
        if key is not None:
            self.key = key
        self.vars: dict[str, Any] = vars
        super().__init__(f"{self.key} {vars}" if vars else self.key)


class ConfigError(MetnosError, ValueError):
    """A setting that does not fit: `metnos.toml` unparsable, an unknown key, a value its
    field refuses (at load, or when a command writes it, as `metnos mail set` does)."""

    key = "ERR_CONFIG_INVALID"


class NotInitialisedError(MetnosError, FileNotFoundError):
    """The home has no owner token yet: `metnos init` has not run there."""

    key = "ERR_HOME_NOT_INITIALISED"


class ExecutorNotFound(MetnosError, LookupError):
    """No executor of that name is in the registry, or in the executor folders a command reads."""

    key = "ERR_EXECUTOR_NOT_FOUND"


class AccountMissing(MetnosError, LookupError):
    """The account a manifest names (`account`) is not configured: the step is refused before
    any sandbox starts."""


class SignatureError(MetnosError, PermissionError):
    """An executor is unsigned, tampered, signed by another key, or rolled back."""

    key = "ERR_EXECUTOR_SIGNATURE_INVALID"


class ManifestError(MetnosError, ValueError):
    """An executor's `manifest.toml` is unreadable or fails its schema (an input type the
    policy cannot check included): the executor is not loaded."""

    key = "ERR_EXECUTOR_MANIFEST_INVALID"


class PolicyDenied(MetnosError, PermissionError):
    """The policy refused a step; `reason` is a short machine code for the audit line."""

    key = "ERR_POLICY_DENIED"


class SandboxError(MetnosError, RuntimeError):
    """The sandbox cannot run a step safely: no bubblewrap or no Python for it, or a path it
    would bind is unsafe."""

    key = "ERR_SANDBOX_FAILED"


class AuditError(MetnosError, RuntimeError):
    """The audit log cannot be trusted or written: its checkpoint is unreadable, unsigned or
    disagrees with the lines, the tail was cut, a write failed, or the log is closed."""

    key = "ERR_AUDIT_BROKEN"


class LLMError(MetnosError, RuntimeError):
    """The model could not be reached or answered garbage after the retries."""

    key = "ERR_LLM_UNAVAILABLE"


class ModelRetryError(MetnosError, ValueError):
    """Something the model produced is unusable; the message goes back to the model."""

    key = "ERR_PLAN_INVALID_CALL"


class DatabaseError(MetnosError, RuntimeError):
    """PostgreSQL cannot be reached, or the embedded one cannot be set up or started."""

    key = "ERR_DATABASE_UNAVAILABLE"

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
    key = "ERR_CONFIG_INVALID"


class NotInitialisedError(MetnosError, FileNotFoundError):
    key = "ERR_HOME_NOT_INITIALISED"


class ExecutorNotFound(MetnosError, LookupError):
    key = "ERR_EXECUTOR_NOT_FOUND"


class AccountMissing(MetnosError, LookupError):
    """The account a manifest names (`account`) is not configured: the step is refused before
    any sandbox starts."""


class SignatureError(MetnosError, PermissionError):
    """An executor is unsigned, tampered, signed by another key, or rolled back."""

    key = "ERR_EXECUTOR_SIGNATURE_INVALID"


class ManifestError(MetnosError, ValueError):
    key = "ERR_EXECUTOR_MANIFEST_INVALID"


class PolicyDenied(MetnosError, PermissionError):
    """The policy refused a step; `reason` is a short machine code for the audit line."""

    key = "ERR_POLICY_DENIED"


class SandboxError(MetnosError, RuntimeError):
    key = "ERR_SANDBOX_FAILED"


class AuditError(MetnosError, RuntimeError):
    key = "ERR_AUDIT_BROKEN"


class LLMError(MetnosError, RuntimeError):
    """The model could not be reached or answered garbage after the retries."""

    key = "ERR_LLM_UNAVAILABLE"


class ModelRetryError(MetnosError, ValueError):
    """Something the model produced is unusable; the message goes back to the model."""

    key = "ERR_PLAN_INVALID_CALL"


class DatabaseError(MetnosError, RuntimeError):
    key = "ERR_DATABASE_UNAVAILABLE"

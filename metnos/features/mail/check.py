"""`metnos mail add`'s one login test: the sandboxed `imap_status` run with the account being
added (the host never speaks IMAP itself, so the test goes the way every mail run goes: the
signed executor, its sandbox, the account in the stdin envelope only)."""

from __future__ import annotations

from metnos.features.mail.account import Account
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.registry import load_registry
from metnos.mechanisms.sandbox import SandboxRequest, SandboxResult, run_sandboxed

EXECUTOR = "imap_status"


async def check_login(settings: Settings, account: Account) -> SandboxResult:
    """The STATUS of INBOX with `account` (nothing read, nothing changed); a failed result
    carries the executor's i18n key (ERR_MAIL_LOGIN_FAILED, ERR_MAIL_UNREACHABLE...)."""
    spec = load_registry(settings).find(EXECUTOR)
    if spec is None:
        return SandboxResult(ok=False, error_key="ERR_MAIL_EXECUTOR_UNAVAILABLE",
                             error_vars={"executor": EXECUTOR})
    return await run_sandboxed(SandboxRequest(
        exec_dir=spec.folder, entry=spec.manifest.entry, profile=spec.manifest.sandbox,
        workspace=settings.workspace, args={"folders": ["INBOX"]}, action_id="mail-add-check",
        max_output_bytes=settings.sandbox.max_output_bytes,
        max_processes=settings.sandbox.max_processes, account=account.envelope()))

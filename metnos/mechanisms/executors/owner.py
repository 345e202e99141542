"""The owner's signature of an executor (`metnos executors sign`, the synt's accept).

`sign_as_owner` signs the folder with the instance's `executors` key and makes the signature
the executor's high-water mark (`metnos.mechanisms.executors.versions`); signing an older version
than the mark is refused unless the owner asks for a downgrade. Both leave an audit line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from metnos.ground.errors import SignatureError
from metnos.ground.keys import load_private_key
from metnos.mechanisms.executors import versions
from metnos.mechanisms.executors.manifest import MANIFEST_FILE, manifest_bytes, parse_manifest
from metnos.mechanisms.executors.registry import KEY_PURPOSE, signatures_dir
from metnos.mechanisms.executors.signing import SignedFacts, sign_executor, signature_path

if TYPE_CHECKING:
    from metnos.ground.settings import Settings


def sign_as_owner(folder: Path, settings: Settings, *, downgrade: bool = False) -> SignedFacts:
    """The owner's signature of the executor in `folder`, made its high-water mark.

    Signing a version older than the owner's last signature of that executor raises
    SignatureError (ERR_EXECUTOR_OLDER_THAN_SIGNED) unless `downgrade`; both the refusal and
    a downgrade leave an audit line."""
    path = folder / MANIFEST_FILE
    manifest = parse_manifest(path, manifest_bytes(path))
    marks = versions.marks_path(settings.keys_dir)
    try:
        before = versions.check_signing(marks, manifest.name, manifest.version,
                                        downgrade=downgrade)
    except SignatureError as exc:
        versions.audit_line(settings, "executors.sign", "deny", reason=exc.key,
                            outcome=f"{manifest.name} {manifest.version}")
        raise
    private_key = load_private_key(settings.keys_dir, KEY_PURPOSE)
    facts = sign_executor(folder, private_key, signature_path(signatures_dir(settings),
                                                              manifest.name))
    versions.record(marks, facts)
    if before is not None and versions.compare_versions(facts.version, before.version) < 0:
        versions.audit_line(settings, "executors.sign", "allow",
                            reason=f"{facts.name} {before.version} -> {facts.version}",
                            outcome="downgraded",
                            args={"name": facts.name, "code_sha256": facts.code_sha256})
    return facts

"""A real instance's secrets for the Law 2 tests: owner token, keys, secret files, environment."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from metnos.faces.serve.prefect_access import new_credential
from metnos.ground import keys
from metnos.ground.settings import LLMSettings, Settings
from metnos.mechanisms.policy.laws import SecretScanner


@dataclass
class Instance:
    settings: Settings
    scanner: SecretScanner
    owner_token: str
    api_key: str
    env: dict[str, str]
    pg_password: str

    def private_key_pem(self, purpose: str = "executors") -> str:
        return keys.private_key_path(self.settings.keys_dir, purpose).read_text()

    def public_key(self, purpose: str = "executors") -> str:
        return keys.public_key_path(self.settings.keys_dir, purpose).read_text().strip()


def make_instance(root: Path) -> Instance:
    api_key = "sk-" + secrets.token_hex(20)
    settings = Settings(home=root / "home", llm=LLMSettings(api_key=api_key))
    settings.secrets_dir.mkdir(parents=True)
    owner_token = secrets.token_urlsafe(32)
    settings.owner_token_path.write_text(owner_token + "\n")
    pg_password = secrets.token_urlsafe(24)
    (settings.secrets_dir / "pg.password").write_text(pg_password)
    (settings.secrets_dir / "prefect.auth").write_text(new_credential() + "\n")
    for purpose in ("executors", "audit"):
        keys.ensure_keypair(settings.keys_dir, purpose)
    env = {
        "TELEGRAM_BOT_TOKEN": "123456789:" + secrets.token_urlsafe(26),
        "SMTP_PASSWORD": "correct-horse-battery",
        "AWS_SECRET": secrets.token_hex(16),
        "SHORT_KEY": "abc",  # under 8 characters: not a secret worth a needle
        "PATH": "/usr/bin:/bin",
        "HOME_TOKEN_FILE": "/etc/not-a-secret-name",
    }
    return Instance(settings, SecretScanner.for_instance(settings, env), owner_token, api_key,
                    env, pg_password)

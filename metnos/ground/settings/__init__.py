"""Settings: one module per group (`metnos.ground.settings.gateway`, `.llm`, `.mail`, ...), composed
by the root `Settings` (`metnos.ground.settings.root`), read through the cached `get_settings()`.

The environment names (`METNOS_<GROUP>_<FIELD>`) and the tables of `metnos.toml` are a public
interface (SPEC §1). This package is ground: it imports nothing of Metnos but `errors`, `paths`,
`system_lang` and `timezone`.
"""

from metnos.ground.settings.channels import TelegramSettings, WebSettings
from metnos.ground.settings.database import DatabaseSettings, PrefectSettings
from metnos.ground.settings.gateway import GatewaySettings
from metnos.ground.settings.i18n import I18nSettings
from metnos.ground.settings.llm import LLMSettings
from metnos.ground.settings.policy import Autonomy, PolicySettings
from metnos.ground.settings.root import Settings, default_home, get_settings
from metnos.ground.settings.sandbox import SandboxSettings
from metnos.ground.settings.voice import VoiceSettings
from metnos.ground.timezone import system_timezone

__all__ = ["Autonomy", "DatabaseSettings", "GatewaySettings", "I18nSettings", "LLMSettings",
           "PolicySettings", "PrefectSettings", "SandboxSettings", "Settings", "TelegramSettings",
           "VoiceSettings", "WebSettings", "default_home", "get_settings", "system_timezone"]

"""The acceptance tests drive the web chat in Chromium and Telegram on its fake Bot API: the
same fixtures as tests/webchat/ and tests/telegram/."""

from tests.telegram.conftest import telegram
from tests.webchat.conftest import browser, chromium_path

__all__ = ["browser", "chromium_path", "telegram"]

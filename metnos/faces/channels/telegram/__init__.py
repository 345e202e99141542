"""The Telegram channel (SPEC §11): aiogram 3, long polling, private chats, DM pairing.

The bot itself is `bot.TelegramChannel` (`bot.start_telegram`); this package's top imports
nothing of aiogram, so a gateway without a bot token never loads it.
"""

from metnos.faces.channels.telegram.config import TelegramConfig, load_config
from metnos.faces.channels.telegram.split import split_html

__all__ = ["TelegramConfig", "load_config", "split_html"]

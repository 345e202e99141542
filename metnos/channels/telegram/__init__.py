"""The Telegram channel (SPEC §11): aiogram 3, long polling, private chats, DM pairing."""

from metnos.channels.telegram.bot import TelegramChannel, start_telegram
from metnos.channels.telegram.config import TelegramConfig, load_config
from metnos.channels.telegram.split import split_html

__all__ = ["TelegramChannel", "TelegramConfig", "load_config", "split_html", "start_telegram"]

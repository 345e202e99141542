"""The Telegram channel (SPEC §11): aiogram 3, long polling, private chats, DM pairing."""

from metnos.faces.channels.telegram.bot import TelegramChannel, start_telegram
from metnos.faces.channels.telegram.config import TelegramConfig, load_config
from metnos.faces.channels.telegram.split import split_html

__all__ = ["TelegramChannel", "TelegramConfig", "load_config", "split_html", "start_telegram"]

"""The mail tests' fixtures: a real IMAP server on loopback (`tests.support.imap`)."""

from tests.support.imap import imap_server

__all__ = ["imap_server"]

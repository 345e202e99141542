"""The mail tests' fixtures: a real IMAP server on loopback (`tests.support.imap`), seeded
(`imap_server`) or with an empty INBOX (`empty_imap`: the digest's first look is silent)."""

from collections.abc import Iterator

import pytest

from tests.support.imap import ImapServer, imap_server, start_imap

__all__ = ["empty_imap", "imap_server"]


@pytest.fixture
def empty_imap() -> Iterator[ImapServer]:
    with start_imap(seed=False) as server:
        yield server

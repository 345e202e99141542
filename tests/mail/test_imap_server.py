"""The loopback IMAP server the mail tests use is real and seeded as documented."""

from __future__ import annotations

from metnos.features.mail.account import load_account
from tests.support.home import MakeHome
from tests.support.imap import SAMPLES, ImapServer, configure, message


def test_seeded_mailbox_and_delivery(imap_server: ImapServer) -> None:
    folders = imap_server.folders()
    inbox = [name for name, (_k, folder, _r, _f) in SAMPLES.items() if folder == "INBOX"]
    assert set(folders) == {"INBOX", "Archive", "Receipts", "Trash"}
    assert len(folders["INBOX"]) == len(inbox) and folders["Archive"] == []
    flags = imap_server.flags("INBOX")
    assert flags[imap_server.seeded["read_it"]] == {"\\Seen"}
    assert sum(1 for f in flags.values() if "\\Seen" not in f) == len(inbox) - 1
    uid = imap_server.deliver("Archive", message("a@example.org", "later", "body"), "\\Flagged")
    assert imap_server.folders()["Archive"] == [uid]
    assert imap_server.flags("Archive") == {uid: {"\\Flagged"}}
    # reading headers and flags never marks anything read
    imap_server.headers("INBOX", imap_server.seeded["request_it"])
    assert imap_server.flags("INBOX") == flags


def test_configure_writes_the_account_like_mail_add(make_home: MakeHome,
                                                    imap_server: ImapServer) -> None:
    home = make_home(lang="en")
    settings = configure(home, imap_server)
    account = load_account(settings)
    assert (account.host, account.port, account.username) == (
        imap_server.host, imap_server.port, imap_server.username)
    assert account.password == imap_server.password and imap_server.password not in repr(account)
    secret = settings.secrets_dir / "mail.password"
    assert secret.stat().st_mode & 0o777 == 0o600
    assert imap_server.password not in (settings.home / "metnos.toml").read_text()

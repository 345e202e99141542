"""The household's mailbox (SPEC §12): the IMAP account, its executors' host side and the
morning digest."""

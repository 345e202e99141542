"""Messages Metnos sends on its own: `notify` steps, proposals, digests (SPEC §7, §12)."""

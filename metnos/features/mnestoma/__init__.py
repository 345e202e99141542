"""Memory and evolution (SPEC §7): the mnestoma, proto-mnests, traces, the ager."""

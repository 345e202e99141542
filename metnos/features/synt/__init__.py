"""The synt cascade (SPEC §7.3, arch §10): a recurring proto-mnest is first answered by a
*composition* of executors already admitted (a graph search in code, `compose`), and only
when none closes the need by *generating* a candidate executor (`generate`: the expected
cost is proposed first, nothing is spent before the owner accepts). A candidate lands in
`METNOS_HOME/executors/<name>/` with a `CANDIDATE.json` and is refused by the registry until
the owner signs it (`candidates`)."""

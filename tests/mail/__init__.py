"""Tests of the mail executors, the account and the digest (issue 15)."""

"""The attack suite (issue 3): every test here is one attack with its expected outcome.

Each attack test carries `@pytest.mark.attack`; tests/support/attacks.py counts them (here and
anywhere else in tests/) and reports how many were tried, skipped and successful (an attack
"succeeds" when its test fails). Target: 0 successful, and 0 skipped under CI.
"""

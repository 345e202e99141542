"""The web login's tests: the attack-style ones carry `@pytest.mark.attack` and are counted
with the security suite (tests/support/attacks.py)."""

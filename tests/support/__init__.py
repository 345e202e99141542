"""Test support: services started around the test session and pytest plugins (`pg`)."""

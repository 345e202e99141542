from tests.pairing.support import audit

__all__ = ["audit"]

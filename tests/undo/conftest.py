from tests.undo.support import actor

__all__ = ["actor"]

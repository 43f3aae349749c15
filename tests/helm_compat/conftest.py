from tests.e2e.conftest import hub

__all__ = ["hub"]

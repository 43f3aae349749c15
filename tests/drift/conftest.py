from tests.registration.harness import hub

__all__ = ["hub"]

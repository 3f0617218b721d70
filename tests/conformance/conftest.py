"""Provider conformance suite: shared compiled fixtures (tests/fixtures/native)."""

from tests.fixtures.native.native_fixtures import native_fixtures

__all__ = ["native_fixtures"]

"""Provider conformance suite: shared compiled fixtures (tests/fixtures/native)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_fixture_module() -> ModuleType:
    name = "rea_native_fixtures"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[1] / "fixtures" / "native" / "native_fixtures.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


native_fixtures = load_fixture_module().native_fixtures

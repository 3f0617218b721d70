"""Fixtures of the Android tests: one APK built from smali sources per session, its DEX, and hostile variants."""

from __future__ import annotations

from pathlib import Path

import androidfixtures
import pytest


@pytest.fixture(scope="session")
def android_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The build folder: fixture.apk, the debug key and the apktool sources."""
    out = tmp_path_factory.mktemp("android")
    androidfixtures.build_apk(out)
    return out


@pytest.fixture(scope="session")
def apk(android_build: Path) -> Path:
    return android_build / "fixture.apk"


@pytest.fixture(scope="session")
def dex(apk: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return androidfixtures.extract(apk, "classes.dex", tmp_path_factory.mktemp("dex") / "classes.dex")


@pytest.fixture(scope="session")
def apk_v2(android_build: Path) -> Path:
    """Version 2 of the application, built beside version 1 (its differences: androidfixtures.build_apk)."""
    return androidfixtures.build_apk(android_build, version=2)

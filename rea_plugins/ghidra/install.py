"""Where Ghidra, its JDK and pyghidra are on this host: read from files only, never by starting anything."""

from __future__ import annotations

import glob
import importlib.util
import os
import re
from collections.abc import Mapping

import msgspec

from rea.plugin import Availability
from rea.plugin import distribution_version

# The API layer (rea_plugins/ghidra/extract.py, engine.py) is written against the Ghidra 12 line; pyghidra 3
# refuses anything older than 12.0.
SUPPORTED_MAJOR = 12
SUPPORTED_TEXT = "Ghidra 12.x (12.0 or later)"
DEFAULT_JAVA_MIN = 21
# Where JDKs live when JAVA_HOME is not set (Debian/Ubuntu, Red Hat, tarballs, macOS).
JDK_GLOBS = (
    "/usr/lib/jvm/*",
    "/usr/java/*",
    "/opt/java/*",
    "/opt/jdk*",
    "/Library/Java/JavaVirtualMachines/*/Contents/Home",
)

REMEDIATION_GHIDRA = (
    "Install Ghidra 12.x (https://github.com/NationalSecurityAgency/ghidra/releases), set "
    "GHIDRA_INSTALL_DIR to its directory and restart rea; `rea doctor` checks it."
)
REMEDIATION_PYGHIDRA = (
    "pip install 'rea-reverse[ghidra]' (pyghidra and JPype) into rea's environment, then restart rea."
)
# pyghidra 3 is the first to drive Ghidra 12 (and refuses anything older).
PYGHIDRA_MIN = (3, 0)


class Jdk(msgspec.Struct, frozen=True, kw_only=True):
    home: str
    version: str
    major: int


class Installation(msgspec.Struct, frozen=True, kw_only=True):
    """A usable Ghidra: its directory and version, the JDK to run it with, and pyghidra's version."""

    install_dir: str
    version: str
    java_min: int
    jdk: Jdk
    pyghidra_version: str


def read_properties(path: str) -> dict[str, str]:
    """``key=value`` lines of a Java properties file (comments and blank lines skipped)."""
    out: dict[str, str] = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.strip()
            if line and not line.startswith(("#", "!")) and "=" in line:
                key, _, value = line.partition("=")
                out[key.strip()] = value.strip()
    return out


def version_tuple(text: str) -> tuple[int, ...]:
    """``12.1.3`` (or ``12.0-BETA``) as numbers; empty when it does not start with a number."""
    match = re.match(r"(\d+(?:\.\d+)*)", text)
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


def read_jdk(home: str) -> Jdk | None:
    """The JDK at ``home`` from its ``release`` file; None when ``home`` holds no Java runtime."""
    java = os.path.join(home, "bin", "java")
    release = os.path.join(home, "release")
    if not (os.path.isfile(java) and os.access(java, os.X_OK) and os.path.isfile(release)):
        return None
    try:
        version = read_properties(release).get("JAVA_VERSION", "").strip('"')
    except OSError:
        return None
    parts = version_tuple(version)
    if not parts:
        return None
    # Java 8 and older spell themselves 1.N.
    major = parts[1] if parts[0] == 1 and len(parts) > 1 else parts[0]
    return Jdk(home=os.path.realpath(home), version=version, major=major)


def host_jdks() -> list[Jdk]:
    """Every JDK in the usual places, newest first (links to the same JDK counted once)."""
    seen: dict[str, Jdk] = {}
    for pattern in JDK_GLOBS:
        for home in sorted(glob.glob(pattern)):
            jdk = read_jdk(home)
            if jdk is not None:
                seen.setdefault(jdk.home, jdk)
    return sorted(seen.values(), key=lambda j: (version_tuple(j.version), j.home), reverse=True)


def pyghidra_version() -> str | None:
    if importlib.util.find_spec("pyghidra") is None or importlib.util.find_spec("jpype") is None:
        return None
    return distribution_version("pyghidra") or "unknown"


def ghidra_version(env: Mapping[str, str] | None = None) -> str | None:
    """The configured installation's version, or None (for the provider descriptor; never raises)."""
    env = os.environ if env is None else env
    root = env.get("GHIDRA_INSTALL_DIR", "")
    if not root or not os.path.isabs(root):
        return None
    try:
        return read_properties(os.path.join(root, "Ghidra", "application.properties")).get("application.version")
    except OSError:
        return None


def discover(env: Mapping[str, str] | None = None) -> tuple[Installation | None, Availability]:
    """The installation to run, or why there is none (with the rejection code and remediation)."""
    env = os.environ if env is None else env
    root = env.get("GHIDRA_INSTALL_DIR", "")
    if not root:
        return None, Availability.missing("not_configured", "GHIDRA_INSTALL_DIR is not set", REMEDIATION_GHIDRA)
    if not os.path.isabs(root):
        return None, Availability.missing(
            "not_configured", f"GHIDRA_INSTALL_DIR must be an absolute path (got {root!r})", REMEDIATION_GHIDRA
        )
    props_path = os.path.join(root, "Ghidra", "application.properties")
    try:
        props = read_properties(props_path)
    except OSError:
        return None, Availability.missing(
            "not_configured",
            f"GHIDRA_INSTALL_DIR={root} is not a Ghidra installation (no readable Ghidra/application.properties)",
            REMEDIATION_GHIDRA,
        )
    version = props.get("application.version", "")
    parts = version_tuple(version)
    if not parts or parts[0] != SUPPORTED_MAJOR:
        return None, Availability.missing(
            "unsupported_version",
            f"Ghidra {version or '(unknown version)'} at {root} is not supported: the ghidra "
            f"provider needs {SUPPORTED_TEXT}",
            REMEDIATION_GHIDRA,
        )
    java_min = (
        int(props["application.java.min"]) if props.get("application.java.min", "").isdigit() else DEFAULT_JAVA_MIN
    )
    jdk, why = _choose_jdk(env, java_min, version)
    if jdk is None:
        return None, why
    pyghidra = pyghidra_version()
    if pyghidra is None:
        return None, Availability.missing(
            "runtime_missing", "the pyghidra and JPype packages are not installed", REMEDIATION_PYGHIDRA
        )
    if pyghidra != "unknown" and version_tuple(pyghidra)[:2] < PYGHIDRA_MIN:
        return None, Availability.missing(
            "unsupported_version",
            f"pyghidra {pyghidra} is installed; Ghidra {version} needs pyghidra 3.0 or later",
            REMEDIATION_PYGHIDRA,
        )
    return (
        Installation(install_dir=root, version=version, java_min=java_min, jdk=jdk, pyghidra_version=pyghidra),
        Availability.ok(f"Ghidra {version} with JDK {jdk.version}; the worker starts on the first query"),
    )


def _choose_jdk(env: Mapping[str, str], java_min: int, ghidra: str) -> tuple[Jdk | None, Availability]:
    remediation = f"Install a JDK {java_min} or later (64-bit) and set JAVA_HOME to it, then restart rea."
    java_home = env.get("JAVA_HOME", "")
    if java_home:
        # An explicit JAVA_HOME is the user's choice: a wrong one is reported, never silently replaced.
        jdk = read_jdk(java_home) if os.path.isabs(java_home) else None
        if jdk is None:
            return None, Availability.missing(
                "runtime_missing",
                f"JAVA_HOME={java_home} is not a JDK (no executable bin/java and release file)",
                remediation,
            )
        if jdk.major < java_min:
            return None, Availability.missing(
                "unsupported_version",
                f"JAVA_HOME={java_home} is JDK {jdk.version}; Ghidra {ghidra} needs JDK {java_min} or later",
                remediation,
            )
        return jdk, Availability.ok()
    found = host_jdks()
    usable = [j for j in found if j.major >= java_min]
    if usable:
        return usable[0], Availability.ok()
    if found:
        return None, Availability.missing(
            "unsupported_version",
            f"JAVA_HOME is not set and the JDKs found ({', '.join(j.version for j in found)}) "
            f"are older than the JDK {java_min} Ghidra {ghidra} needs",
            remediation,
        )
    return None, Availability.missing(
        "runtime_missing", f"JAVA_HOME is not set and no JDK was found (looked in {', '.join(JDK_GLOBS)})", remediation
    )

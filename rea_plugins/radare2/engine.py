"""radare2's core library in the worker process, through its C API (the r2libr wheel's libr_core).

Only four entry points are used: ``r_core_new``, ``r_core_file_open`` + ``r_core_bin_load`` (the target path
never goes through radare2's command parser) and ``r_core_cmd_str``, whose buffer is freed after each
command. Commands are fixed strings with integer addresses; nothing a caller sends reaches them as text.
"""

from __future__ import annotations

import ctypes
import json
import os

from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import ReaError

UT64_MAX = 0xFFFF_FFFF_FFFF_FFFF
R_PERM_R = 4
# radare2's sandbox (cfg.sandbox, on once the target is loaded) refuses larger blocks in one command.
MAX_COMMAND_BLOCK = 32 * 1024


class Core:
    """One radare2 core (``RCore``) with one file loaded."""

    def __init__(self, libdir: str) -> None:
        try:
            self._lib = ctypes.CDLL(os.path.join(libdir, "libr_core.so"))
            self._util = ctypes.CDLL(os.path.join(libdir, "libr_util.so"))
        except OSError:
            raise ReaError(
                "provider_unavailable",
                "radare2's libraries could not be loaded",
                remediation="Reinstall the radare2 extra: pip install --force-reinstall 'rea-reverse[radare2]'",
                details={"provider_id": "radare2", "reason": "library_load"},
            ) from None
        lib = self._lib
        lib.r_core_new.restype = ctypes.c_void_p
        lib.r_core_new.argtypes = []
        lib.r_core_cmd_str.restype = ctypes.c_void_p
        lib.r_core_cmd_str.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.r_core_file_open.restype = ctypes.c_void_p
        lib.r_core_file_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint64]
        lib.r_core_bin_load.restype = ctypes.c_bool
        lib.r_core_bin_load.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64]
        lib.r_core_free.restype = None
        lib.r_core_free.argtypes = [ctypes.c_void_p]
        self._util.r_mem_free.argtypes = [ctypes.c_void_p]
        self._util.r_mem_free.restype = None
        self._core = self._new()

    def _new(self) -> int:
        core = self._lib.r_core_new()
        if not core:
            raise MemoryError("radare2 could not allocate its core")
        return int(core)

    def renew(self) -> None:
        """Replace the core with a fresh one (nothing loaded, default configuration)."""
        old, self._core = self._core, self._new()
        self._lib.r_core_free(old)

    def cmd(self, command: str) -> str:
        """Run one radare2 command and return its output (undecodable bytes replaced)."""
        ptr = self._lib.r_core_cmd_str(self._core, command.encode("ascii"))
        if not ptr:
            return ""
        try:
            return ctypes.string_at(ptr).decode("utf-8", "replace")
        finally:
            self._util.r_mem_free(ptr)

    def cmdj(self, command: str) -> JSONValue:
        """A JSON command's parsed output; ``None`` when radare2 printed nothing.

        radare2's own JSON (its ``j`` commands), read as it prints it: its keys vary by version and format, so
        callers read them with ``integer`` and ``str`` rather than through a schema."""
        text = self.cmd(command).strip()
        if not text:
            return None
        try:
            value: JSONValue = json.loads(text)
            return value
        except ValueError:
            raise ReaError(
                "unreadable_output",
                f"radare2 printed output that is not JSON for {command.split()[0]}",
                remediation="Retry, or open the target with another provider.",
                details={"command": command.split()[0]},
            ) from None

    def open(self, path: str) -> bool:
        """Open and load ``path`` read-only at radare2's default base address."""
        raw = os.fsencode(path)
        if not self._lib.r_core_file_open(self._core, raw, R_PERM_R, 0):
            return False
        return bool(self._lib.r_core_bin_load(self._core, raw, UT64_MAX))

    def configure(self, settings: dict[str, str]) -> None:
        for key, value in settings.items():
            self.cmd(f"e {key}={value}")

    def read(self, address: int, size: int) -> bytes:
        """``size`` bytes of the loaded image at ``address`` (unmapped bytes read as radare2 fills them)."""
        out = bytearray()
        while len(out) < size:
            n = min(size - len(out), MAX_COMMAND_BLOCK)
            text = self.cmd(f"p8 {n} @ {address + len(out)}").strip()
            try:
                chunk = bytes.fromhex(text)
            except ValueError:
                chunk = b""
            out += chunk
            if len(chunk) < n:
                break
        return bytes(out)


def list_of(value: JSONValue) -> list[JSONObject]:
    """A JSON list of objects, or an empty list for anything else radare2 may print."""
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def object_of(value: JSONValue) -> JSONObject:
    """A JSON object, or an empty one for anything else radare2 may print."""
    return value if isinstance(value, dict) else {}


def integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None

"""The analyst's C types in angr: the type library and prototypes, applied before the decompiler runs.

The binary tool family sends a pseudo-code request ``types``: the library as C (dependency order) and
C prototypes by link-time address. They are parsed with angr's own C front end (pycparser) and set as
the functions' prototypes (source ``USER``), so variable recovery types the arguments (``a0->field_8``
reads ``opts->extensions``) and the arguments take the prototype's names. Applying is idempotent per
set of types; a later request without them puts angr's own prototypes back.
"""

from __future__ import annotations

from typing import Any

from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import arg_object
from rea.plugin import arg_strs
from rea.plugin import types_key
from rea_plugins.angr.model import Analysis


class Applied:
    """What this worker set in angr's knowledge base, so another set of types can replace it."""

    def __init__(self) -> None:
        self.key = ""
        # angr address -> (prototype, its source, calling convention) before rea set one.
        self.saved: dict[int, tuple[Any, Any, Any]] = {}
        self.arg_names: dict[int, tuple[str | None, ...]] = {}
        self.problems: list[str] = []

    def apply(self, a: Analysis, types: JSONObject | None) -> list[str]:
        """Make angr's prototypes those of ``types`` (restoring the previous set first); the problems met."""
        key = types_key(types)
        if key == self.key:
            return self.problems
        self._restore(a)
        self.key, self.problems = key, []
        if not types:
            return []
        from angr.calling_conventions import default_cc
        from angr.knowledge_plugins.functions.function import PrototypeSource
        from angr.sim_type import parse_file

        library: dict[str, Any] = {}  # type name -> angr's SimType (angr's objects stay Any)
        source = "\n".join(arg_strs(types, "declarations") or [])
        if source.strip():
            try:
                _, parsed = parse_file(source, arch=a.proj.arch)
                library = {k: v.with_arch(a.proj.arch) for k, v in parsed.items()}
            except Exception as exc:  # angr's front end refuses what it does not model (bit-fields, ...)
                self.problems.append(f"angr could not take the type library: {str(exc)[:200]}")
        functions = a.proj.kb.functions
        for address, text in sorted((arg_object(types, "prototypes") or {}).items()):
            try:
                at = a.inn(address)
            except ReaError:
                continue
            if not functions.contains_addr(at):
                continue
            try:
                defs, _ = parse_file(str(text).rstrip(";") + ";", predefined_types=library, arch=a.proj.arch)
                proto = next(iter(defs.values())).with_arch(a.proj.arch)
            except Exception as exc:
                self.problems.append(f"angr could not take the prototype at {address}: {str(exc)[:200]}")
                continue
            f = functions.get_by_addr(at)
            self.saved.setdefault(at, (f.prototype, f.prototype_source, f.calling_convention))
            if f.calling_convention is None:
                # Without a convention the decompiler recovers one, and its guess of the prototype with it.
                cc = default_cc(a.proj.arch.name, platform=a.proj.simos.name if a.proj.simos else None)
                if cc is not None:
                    f.calling_convention = cc(a.proj.arch)
            f.prototype = proto
            f.prototype_source = PrototypeSource.USER
            self.arg_names[at] = tuple(proto.arg_names or ())
        return self.problems

    def _restore(self, a: Analysis) -> None:
        functions = a.proj.kb.functions
        for at, (proto, source, cc) in self.saved.items():
            if functions.contains_addr(at):
                f = functions.get_by_addr(at)
                f.prototype = proto
                f.prototype_source = source
                f.calling_convention = cc
        self.saved.clear()
        self.arg_names.clear()

    def name_arguments(self, f: Any, dec: Any) -> None:
        """The decompiled function's arguments named as the prototype names them (angr's own naming
        passes give pointer arguments generic names such as ``ptr``)."""
        names = self.arg_names.get(f.addr)
        cfunc = getattr(getattr(dec, "codegen", None), "cfunc", None)
        if not names or cfunc is None:
            return
        changed = False
        for i, arg in enumerate(getattr(cfunc, "arg_list", None) or []):
            if i >= len(names) or not names[i]:
                continue
            for var in (getattr(arg, "variable", None), getattr(arg, "unified_variable", None)):
                if var is not None and var.name != names[i]:
                    var.name = names[i]
                    var.renamed = True
                    changed = True
        if changed:
            dec.codegen.regenerate_text()

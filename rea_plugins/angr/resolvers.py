"""Indirect-jump resolvers handed to CFGFast: angr's defaults, with one jump-table repair (worker process only)."""

from __future__ import annotations

from typing import Any

from angr.analyses.cfg.indirect_jump_resolvers import default_resolvers
from angr.analyses.cfg.indirect_jump_resolvers.jumptable import JumpTableResolver


class RelativeTableResolver(JumpTableResolver):  # type: ignore[misc]
    """angr's jump-table resolver, with two repairs.

    gcc -O2 compiles a large switch as ``target = T + (int32)T[i]``; when register pressure makes it keep
    ``T`` on the stack, angr reads the entries right but returns them without adding ``T``: offsets that
    point nowhere, so every case of the switch is lost from the function.

    A table of function pointers dispatched by a jump (``return table[k](a, b)`` compiled to ``jmp *%rax``)
    resolves like a switch, and angr would then make every function the table names a block of the
    dispatching function. When every target is a known function start (symbols, unwind tables), the targets
    are made functions before angr follows them, so the jump leaves the function instead of absorbing them.
    """

    def __init__(self, project: Any, starts: frozenset[int] = frozenset()) -> None:
        super().__init__(project)
        self.starts = starts

    def resolve(
        self,
        cfg: Any,
        addr: int,
        func_addr: int,
        block: Any,
        jumpkind: str,
        func_graph_complete: bool = True,
        **kwargs: Any,
    ) -> tuple[bool, Any]:
        resolved, targets = self._resolve_repaired(cfg, addr, func_addr, block, jumpkind, func_graph_complete, **kwargs)
        if resolved and targets and jumpkind == "Ijk_Boring" and all(t in self.starts for t in targets):
            # angr later folds functions that are only ever jump-table targets into the jumping function,
            # unless it counts them as symbol-given starts.
            given = getattr(cfg, "_function_addresses_from_symbols", None)
            for t in set(targets):
                if t != func_addr:
                    cfg.kb.functions.function(addr=t, create=True)
                    if isinstance(given, set):
                        given.add(t)
        return resolved, targets

    def _resolve_repaired(
        self, cfg: Any, addr: int, func_addr: int, block: Any, jumpkind: str, func_graph_complete: bool, **kwargs: Any
    ) -> tuple[bool, Any]:
        resolved, targets = super().resolve(
            cfg, addr, func_addr, block, jumpkind, func_graph_complete=func_graph_complete, **kwargs
        )
        if not resolved or not targets or any(_is_code(self.project, t) for t in targets):
            return resolved, targets
        ij = cfg.indirect_jumps.get(addr)
        table = ij.jumptables[0] if ij is not None and ij.jumptables else None
        if table is None or table.addr is None or table.entry_size != 4 or not table.entries:
            return resolved, targets
        mask = (1 << self.project.arch.bits) - 1
        fixed = [(table.addr + _signed32(e)) & mask for e in table.entries]
        if not all(_is_code(self.project, t) for t in fixed):
            return resolved, targets
        ij.resolved_targets = set(fixed)
        return True, fixed


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _is_code(project: Any, addr: int) -> bool:
    section = project.loader.find_section_containing(addr)
    if section is not None:
        return bool(section.is_executable)
    segment = project.loader.find_segment_containing(addr)
    return segment is not None and bool(segment.is_executable)


def indirect_jump_resolvers(project: Any, starts: frozenset[int] = frozenset()) -> list[Any]:
    """angr's default resolvers for the main object, its jump-table resolver replaced by the repaired one.

    ``starts`` are known function starts (angr addresses): a table whose targets they are is a pointer table.
    """
    main = project.loader.main_object
    if getattr(main, "is_outer", False) and main.child_objects:
        main = main.child_objects[0]  # CFGFast analyses the first slice of an outer (fat) object
    defaults: Any = default_resolvers.default_indirect_jump_resolvers  # unannotated in angr
    resolvers = defaults(main, project)
    return [RelativeTableResolver(project, starts) if type(r) is JumpTableResolver else r for r in resolvers]

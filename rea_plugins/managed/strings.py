"""search_managed_strings: the literals of the user-string heap (#US), each with the methods whose ldstr loads it."""

from __future__ import annotations

from rea.plugin import Evidence
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import search
from rea.plugin import shown_page
from rea_plugins.managed import common
from rea_plugins.managed import sites
from rea_plugins.managed.model import SCHEMA_VERSION
from rea_plugins.managed.model import STRINGS_OPERATION
from rea_plugins.managed.model import Selection
from rea_plugins.managed.model import Site
from rea_plugins.managed.model import StringsResult
from rea_plugins.managed.model import UserString
from rea_plugins.managed.reader import token_text

DEFAULT_LIMIT = 50
DEFAULT_SITES = 5
DEFAULT_VALUE_CHARS = 300
MAX_VALUE_CHARS = 1 << 16


@common.guarded
def handle(call: ToolCall) -> Evidence:
    args = call.args
    match = search.matcher(args) if args.get("pattern") is not None else None
    chosen = common.selection(args)
    namespace = chosen.namespace if chosen is not None else None
    in_namespace = common.selector(Selection(namespace=namespace) if namespace is not None else None)
    max_sites = arg_int(args, "max_sites", DEFAULT_SITES)
    max_chars = min(arg_int(args, "max_value_chars", DEFAULT_VALUE_CHARS), MAX_VALUE_CHARS)
    with sites.opened(call) as (target, image, entry):
        found = sites.sites(entry, call.ctx)
        heap = image.user_strings_all()
        loads: dict[int, list[tuple[int, int]]] = {}
        ldstr = found.opcodes.index("ldstr") if "ldstr" in found.opcodes else -1
        for i in range(len(found)):
            if found.opcode[i] == ldstr:
                loads.setdefault(found.token[i] & 0xFFFFFF, []).append((found.method[i], found.offset[i]))
        chosen_rows = []
        for offset, text in heap:
            if match is not None and not match(text):
                continue
            where = loads.get(offset, [])
            if namespace is not None:
                where = [(rid, at) for rid, at in where if in_namespace(image.method_key(rid))]
                if not where:
                    continue
            chosen_rows.append((offset, text, where))
        start, limit = common.window(args, "", DEFAULT_LIMIT)
        items = [
            UserString(
                token=token_text(0x70000000 | offset),
                value=text[:max_chars],
                length=len(text),
                loads=len(where),
                sites=[Site(method=image.method_key(rid), offset=at) for rid, at in where[:max_sites]],
                truncated=len(text) > max_chars,
            )
            for offset, text, where in chosen_rows[start : start + limit]
        ]
        result = StringsResult(
            schema_version=SCHEMA_VERSION,
            assembly=image.assembly_name(),
            heap_strings=len(heap),
            scanned_methods=found.scanned,
            undecoded_methods=found.undecoded,
            strings=shown_page(items, offset=start, limit=limit, total=len(chosen_rows)),
            selection=chosen,
        )
    limitations = []
    if found.undecoded:
        limitations.append(f"{found.undecoded} method bodies did not decode: the strings they load show no site there.")
    call.ctx.finish(f"{result.strings.total} of {len(heap)} strings")
    return common.static_evidence(call, STRINGS_OPERATION, target, result, limitations)

"""Class search, class and method inspection, and static references over the application's DEX code."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from rea.plugin import CallContext
from rea_plugins.android import dad as fixes
from rea_plugins.android import loader
from rea_plugins.android.common import access
from rea_plugins.android.common import check_offset
from rea_plugins.android.common import field_id
from rea_plugins.android.common import find_class
from rea_plugins.android.common import java_name
from rea_plugins.android.common import method_id
from rea_plugins.android.common import one_method
from rea_plugins.android.model import SCHEMA_VERSION
from rea_plugins.android.model import ClassHit
from rea_plugins.android.model import ClassInfo
from rea_plugins.android.model import ClassSearch
from rea_plugins.android.model import Field
from rea_plugins.android.model import Instruction
from rea_plugins.android.model import Method
from rea_plugins.android.model import MethodInfo
from rea_plugins.android.model import SourceText
from rea_plugins.android.model import page

# Matches named per class hit under scope methods or strings.
MAX_MATCHES_PER_CLASS = 5
FIELD_OPS = ("iget", "iput", "sget", "sput")
DECOMPILED = (
    "Decompiled source is androguard's DAD reconstruction, a reading aid: the bytecode listing is what the method does."
)


# -- search_android_classes ------------------------------------------------------------------------


def search(
    loaded: loader.Loaded, match: Callable[[str], bool], scope: str, offset: int, limit: int, ctx: CallContext
) -> ClassSearch:
    hits: list[ClassHit] = []
    with loader.guarded("the DEX code"):
        if scope == "strings":
            found: dict[str, list[str]] = {}
            for value, sa in loader_strings(loaded):
                if not match(value):
                    continue
                for ca, _mx in sa.get_xref_from():
                    bucket = found.setdefault(ca.name, [])
                    if value not in bucket:
                        bucket.append(value)
            classes = loaded.classes()
            for desc, values in found.items():
                if desc in classes:
                    dex, cls = classes[desc]
                    hits.append(_hit(desc, dex, cls, sorted(values)))
        else:
            for i, (desc, (dex, cls)) in enumerate(loaded.classes().items()):
                if i % 1000 == 0:
                    ctx.check("searching classes")
                if scope == "names":
                    if match(java_name(desc)):
                        hits.append(_hit(desc, dex, cls, []))
                else:
                    names = sorted({m.get_name() for m in cls.get_methods() if match(m.get_name())})
                    if names:
                        hits.append(_hit(desc, dex, cls, names))
    hits.sort(key=lambda h: h.name)
    check_offset(offset, len(hits))
    return ClassSearch(
        schema_version=SCHEMA_VERSION,
        scope=scope,
        classes=hits[offset : offset + limit],
        page=page(len(hits), offset, limit),
    )


def loader_strings(loaded: loader.Loaded) -> Iterator[tuple[str, Any]]:
    for value, sa in loaded.analysis.get_strings_analysis().items():
        yield (value if isinstance(value, str) else str(value)), sa


def _hit(desc: str, dex: str, cls: Any, matches: list[str]) -> ClassHit:
    sup = cls.get_superclassname()
    return ClassHit(
        name=java_name(desc),
        dex=dex,
        superclass=java_name(sup) if sup else None,
        matches=matches[:MAX_MATCHES_PER_CLASS],
    )


# -- inspect_android_class -------------------------------------------------------------------------


def _value(field: Any) -> Any:
    init = field.get_init_value()
    value = init.get_value() if init is not None else None
    return value if isinstance(value, str | int | float | bool) else None


def _count(method: Any) -> int:
    code = method.get_code()
    return sum(1 for _ in method.get_instructions()) if code is not None else 0


def method_record(cls_desc: str, method: Any) -> Method:
    return Method(
        id=method_id(cls_desc, method.get_name(), method.get_descriptor()),
        name=method.get_name(),
        descriptor=method.get_descriptor().replace(" ", ""),
        access=access(method.get_access_flags_string()),
        instructions=_count(method),
    )


def inspect_class(loaded: loader.Loaded, name: str, offset: int, limit: int) -> ClassInfo:
    dex_name, cls = find_class(loaded, name)
    desc = cls.get_name()
    with loader.guarded(dex_name, dex=dex_name, class_name=java_name(desc)):
        fields = [
            Field(
                name=f.get_name(), type=f.get_descriptor(), access=access(f.get_access_flags_string()), value=_value(f)
            )
            for f in cls.get_fields()
        ]
        methods = [method_record(desc, m) for m in cls.get_methods()]
        sup = cls.get_superclassname()
        src_idx = cls.get_source_file_idx()
        dex = dict(loaded.dexes)[dex_name]
        source = dex.get_cm_string(src_idx) if src_idx != 0xFFFFFFFF else None
        info = {
            "interfaces": [java_name(i) for i in cls.get_interfaces()],
            "annotations": [java_name(a) for a in cls.get_annotations()],
            "access": access(cls.get_access_flags_string()),
        }
    check_offset(offset, max(len(fields), len(methods)))
    return ClassInfo(
        schema_version=SCHEMA_VERSION,
        name=java_name(desc),
        descriptor=desc,
        dex=dex_name,
        superclass=java_name(sup) if sup else None,
        source_file=source,
        fields=fields[offset : offset + limit],
        methods=methods[offset : offset + limit],
        pages={"fields": page(len(fields), offset, limit), "methods": page(len(methods), offset, limit)},
        **info,
    )


# -- inspect_android_method ------------------------------------------------------------------------


class Scan:
    """What a method's bytecode references: strings loaded, methods called, fields read or written."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.calls: list[str] = []
        self.reads: list[str] = []
        self.writes: list[str] = []


def _add(bucket: list[str], value: str) -> None:
    if value not in bucket:
        bucket.append(value)


def scan(method: Any) -> tuple[list[Instruction], Scan]:
    """The bytecode listing (byte offsets) and its references, in order of first appearance."""
    rows: list[Instruction] = []
    refs = Scan()
    if method.get_code() is None:
        return rows, refs
    for off, ins in method.get_instructions_idx():
        op = ins.get_name()
        rows.append(Instruction(offset=off, text=f"{op} {ins.get_output()}".strip()))
        if op.startswith("const-string"):
            _add(refs.strings, str(ins.get_string()))
        elif op.startswith("invoke"):
            cls, name, proto = ins.cm.get_method(ins.get_ref_kind())
            _add(refs.calls, method_id(cls, name, "".join(proto)))
        elif op.startswith(FIELD_OPS):
            cls, type_, name = ins.cm.get_field(ins.get_ref_kind())
            _add(refs.reads if op[1:4] == "get" else refs.writes, field_id(cls, name, type_))
    return rows, refs


def decompile(loaded: loader.Loaded, method: Any) -> tuple[str | None, str]:
    """(source, reason): DAD's Java-like source, or None and why not (never the exception's text)."""
    if method.get_code() is None:
        return None, "the method has no bytecode (abstract or native)"
    from androguard.decompiler import decompile as dad  # type: ignore[import-untyped]

    # DvMethod.process builds its Writer from this module global; the corrected one (rea_plugins.android.dad)
    # stands in for one call, under loader.LOCK, which every androguard call holds.
    original = dad.Writer
    dad.Writer = fixes.writer_class()
    try:
        dv = dad.DvMethod(loaded.analysis.get_method(method))
        dv.process()
        text = dv.get_source()
    except RecursionError:
        return None, "the decompiler ran out of nesting depth on this method"
    except Exception:  # a method DAD cannot structure still has its bytecode listing
        return None, "the decompiler could not structure this method"
    finally:
        dad.Writer = original
    if not isinstance(text, str) or not text.strip():
        return None, "empty output"
    lost = _lost_calls(method, text)
    if lost:
        return None, f"the decompiled source lost what the bytecode does ({', '.join(lost[:3])})"
    return text.strip("\n") + "\n", ""


def _lost_calls(method: Any, text: str) -> list[str]:
    """What the bytecode does that the source never says: a sign the decompiler garbled the method.

    Calls (by name) have side effects, so DAD keeps them; a constructor shows as ``new T(``, ``super(`` or
    ``this(``. A monitor-enter is a synchronized block, which DAD can drop while keeping its try/finally.
    """
    _, refs = scan(method)
    lost = []
    for call in refs.calls:
        name = call.split("->", 1)[1].split("(", 1)[0]
        if name in ("<init>", "<clinit>"):
            continue
        if f"{name}(" not in text:
            lost.append(name)
    if "synchronized" not in text and any(ins.get_name() == "monitor-enter" for ins in method.get_instructions()):
        lost.append("synchronized (monitor-enter)")
    return lost


def inspect_method(
    loaded: loader.Loaded,
    class_name: str,
    name: str,
    descriptor: str | None,
    offset: int,
    limit: int,
    source_offset: int,
    max_source_chars: int,
) -> MethodInfo:
    dex_name, cls = find_class(loaded, class_name)
    desc = cls.get_name()
    method = one_method(cls, name, descriptor)
    with loader.guarded(dex_name, dex=dex_name, method=method_id(desc, name, method.get_descriptor())):
        rows, refs = scan(method)
        code = method.get_code()
        registers = code.get_registers_size() if code is not None else None
        record = method_record(desc, method)
        if record.id not in loaded.sources:
            loaded.sources[record.id] = decompile(loaded, method)
        text, reason = loaded.sources[record.id]
    check_offset(offset, len(rows))
    if text is None and rows:
        # No trustworthy source: the smali listing stands in, with the reason.
        text = "\n".join(r.text for r in rows) + "\n"
        status = "smali"
    else:
        status = "decompiled"
    if text is None:
        source = SourceText(status="unavailable", reason=reason)
    else:
        check_offset(source_offset, len(text), "source_offset")
        end = min(len(text), source_offset + max_source_chars)
        source = SourceText(
            status=status,  # type: ignore[arg-type]
            text=text[source_offset:end],
            reason=reason,
            offset=source_offset,
            total_chars=len(text),
            next_offset=end if end < len(text) else None,
        )
    fields = refs.reads + [f for f in refs.writes if f not in refs.reads]
    return MethodInfo(
        schema_version=SCHEMA_VERSION,
        method=record,
        class_name=java_name(desc),
        registers=registers,
        source=source,
        bytecode=rows[offset : offset + limit],
        bytecode_page=page(len(rows), offset, limit),
        strings=refs.strings,
        calls=refs.calls,
        fields=fields,
    )

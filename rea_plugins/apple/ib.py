"""decode_interface_builder and trace_native_ui_action: XIB/storyboard objects, outlets and actions, and an action's
selector resolved to its implementation through the Objective-C metadata of the bundle's executable.

XIB and storyboard files are XML (read with the standard library's ElementTree, DOCTYPE and entities refused).
A compiled NIB is either an NSKeyedArchiver plist (read by inspect_keyed_archive) or Apple's NIBArchive, which no
maintained library reads: it is a typed error naming the source to pass instead.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import arg_str
from rea.plugin import identify
from rea.plugin import objc
from rea.plugin import read_regular
from rea.plugin import search
from rea_plugins.apple import common
from rea_plugins.apple.model import IBConnection
from rea_plugins.apple.model import IBObject
from rea_plugins.apple.model import InterfaceDocument
from rea_plugins.apple.model import UIAction
from rea_plugins.apple.model import UIActionTrace
from rea_plugins.apple.plists import bundle_of

MAX_DOCUMENT_BYTES = 32 << 20
# Interface Builder element names and the class each stands for, by runtime (a customClass overrides them).
UIKIT = {
    "button": "UIButton",
    "view": "UIView",
    "label": "UILabel",
    "textField": "UITextField",
    "textView": "UITextView",
    "imageView": "UIImageView",
    "switch": "UISwitch",
    "slider": "UISlider",
    "segmentedControl": "UISegmentedControl",
    "tableView": "UITableView",
    "tableViewCell": "UITableViewCell",
    "collectionView": "UICollectionView",
    "scrollView": "UIScrollView",
    "stackView": "UIStackView",
    "navigationController": "UINavigationController",
    "tabBarController": "UITabBarController",
    "viewController": "UIViewController",
    "tableViewController": "UITableViewController",
    "barButtonItem": "UIBarButtonItem",
    "navigationItem": "UINavigationItem",
    "tapGestureRecognizer": "UITapGestureRecognizer",
    "webView": "WKWebView",
    "wkWebView": "WKWebView",
}
APPKIT = {
    "button": "NSButton",
    "view": "NSView",
    "textField": "NSTextField",
    "window": "NSWindow",
    "menu": "NSMenu",
    "menuItem": "NSMenuItem",
    "viewController": "NSViewController",
    "windowController": "NSWindowController",
    "tableView": "NSTableView",
    "imageView": "NSImageView",
    "customObject": "NSObject",
}
# Elements that hold others or describe them rather than being objects in the graph.
STRUCTURAL = {
    "connections",
    "subviews",
    "objects",
    "constraints",
    "constraint",
    "scenes",
    "scene",
    "resources",
    "state",
    "rect",
    "color",
    "fontDescription",
    "autoresizingMask",
    "viewLayoutGuide",
    "point",
    "size",
    "inset",
    "edgeInsets",
    "string",
    "image",
    "namedColor",
    "systemColor",
    "layoutGuides",
    "userDefinedRuntimeAttributes",
    "userDefinedRuntimeAttribute",
    "textInputTraits",
    "nil",
    "real",
    "integer",
    "freeformSimulatedSizeMetrics",
    "simulatedMetricsContainer",
    "dependencies",
    "deployment",
    "plugIn",
    "capability",
    "document",
    "device",
}


def not_interface(path: str, why: str) -> ReaError:
    return ReaError(
        "unsupported_target",
        f"{path} is not an Interface Builder document rea reads: {why}",
        remediation=(
            "Pass the .xib or .storyboard source; a compiled .nib that is a keyed archive reads with "
            "inspect_keyed_archive, and NIBArchive (compiled for iOS) has no maintained reader."
        ),
        details={"path": path, "reason": "format"},
    )


def parse_document(target: Target) -> tuple[str, str, list[IBObject], list[IBConnection]]:
    """(kind, runtime, objects, connections) of one XIB or storyboard."""
    data = read_regular(target.resolved_path, MAX_DOCUMENT_BYTES, code="unsupported_target", what="interface document")
    if data.startswith(b"NIBArchive"):
        raise not_interface(target.path, "a compiled NIBArchive")
    if data.startswith(b"bplist") or b"NSKeyedArchiver" in data[:4096]:
        raise not_interface(target.path, "a compiled NIB (keyed archive)")
    if b"<!DOCTYPE" in data[:4096] or b"<!ENTITY" in data:
        raise not_interface(target.path, "it declares a DOCTYPE or entities, which Interface Builder never writes")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise not_interface(target.path, f"XML does not parse at line {exc.position[0]}") from None
    if root.tag != "document":
        raise not_interface(target.path, f"the root element is <{root.tag[:40]}>, not <document>")
    doc_type = root.get("type", "")
    kind = "storyboard" if "Storyboard" in doc_type else "xib"
    runtime = "macos" if "Cocoa" in doc_type and "CocoaTouch" not in doc_type else "ios"
    names = APPKIT if runtime == "macos" else UIKIT
    objects: dict[str, IBObject] = {}
    pending: list[tuple[str, ET.Element]] = []
    stack: list[tuple[ET.Element, str | None]] = [(root, None)]
    while stack:
        el, owner = stack.pop()
        oid = el.get("id")
        here = owner
        if oid and el.tag not in STRUCTURAL and el.tag not in ("outlet", "action", "segue"):
            placeholder = el.get("placeholderIdentifier")
            # The first responder is whoever holds focus at run time: its customClass only says what IB assumed.
            if placeholder == "IBFirstResponder":
                cls = "FirstResponder"
            else:
                cls = el.get("customClass") or (
                    "FilesOwner" if placeholder == "IBFilesOwner" else names.get(el.tag, el.tag)
                )
            objects[oid] = IBObject(
                id=oid,
                element=el.tag,
                class_name=cls,
                custom=el.get("customClass") is not None,
                module=el.get("customModule"),
                label=el.get("userLabel") or el.get("title") or _title(el),
                placeholder=placeholder,
            )
            here = oid
        for child in el:
            if child.tag == "connections":
                pending.extend((here or "", c) for c in child)
            else:
                stack.append((child, here))
    connections = []
    for source, c in pending:
        if c.tag not in ("outlet", "action", "segue", "outletCollection"):
            continue
        dest = c.get("destination", "")
        connections.append(
            IBConnection(
                kind="outlet" if c.tag == "outletCollection" else c.tag,  # type: ignore[arg-type]
                id=c.get("id", ""),
                source=source,
                source_class=objects[source].class_name if source in objects else None,
                destination=dest,
                destination_class=objects[dest].class_name if dest in objects else None,
                property=c.get("property"),
                selector=c.get("selector"),
                event=c.get("eventType"),
            )
        )
    ordered = sorted(objects.values(), key=lambda o: o.id)
    return kind, runtime, ordered, connections


def _title(el: ET.Element) -> str | None:
    state = el.find("state")
    return state.get("title") if state is not None else None


@common.guarded
def decode_interface_builder(call: ToolCall) -> Evidence:
    target = common.given_target(call)
    kind, runtime, objects, connections = parse_document(target)
    # REA's names for the page sizes: max_objects, max_connections.
    args: Arguments = {**call.args, "objects_limit": call.args.get("max_objects", 40)}
    args["connections_limit"] = call.args.get("max_connections", 40)
    objs, obj_page = common.page(objects, args, "objects", 40)
    conns, conn_page = common.page(connections, args, "connections", 40)
    counts = {
        "objects": len(objects),
        **{k: sum(1 for c in connections if c.kind == k) for k in ("outlet", "action", "segue")},
    }
    report = InterfaceDocument(
        source=target.name,
        kind=kind,  # type: ignore[arg-type]
        runtime=runtime,  # type: ignore[arg-type]
        objects=objs,
        objects_page=obj_page,
        connections=conns,
        connections_page=conn_page,
        counts=counts,
    )
    return common.evidence(call, target, report)


# -- an action to its implementation ----------------------------------------------------------------


def _binary_for(call: ToolCall, document: Target) -> Target:
    """binary_path, else the executable of the bundle the document is in, else the open binary."""
    if arg_str(call.args, "binary_path"):
        return common.target_of(call, "binary_path")
    bundle = bundle_of(document.resolved_path)
    exe = common.bundle_executable(bundle) if bundle else None
    if exe is not None:
        return identify(exe, call.ctx)
    return call.session.require_target()


def implementation(meta: objc.Metadata, class_name: str, selector: str) -> tuple[objc.Method | None, list[str]]:
    """The instance method ``selector`` of ``class_name`` or the nearest superclass (or a category) defining it, and
    the class chain searched."""
    classes = {c.name: c for c in meta.classes}
    by_class: dict[str, list[objc.Method]] = {}
    for cat in meta.categories:
        if cat.class_name:
            by_class.setdefault(cat.class_name, []).extend(cat.methods)
    chain: list[str] = []
    name: str | None = class_name
    while name is not None and name not in chain and len(chain) < 64:
        chain.append(name)
        cls = classes.get(name)
        for m in (cls.methods if cls else []) + by_class.get(name, []):
            if m.selector == selector and not m.class_method:
                return m, chain
        name = cls.superclass if cls else None
    return None, chain


@common.guarded
def trace_native_ui_action(call: ToolCall) -> Evidence:
    document = identify(arg_str(call.args, "path", ""), call.ctx)  # required by the schema
    _, _, objects, connections = parse_document(document)
    binary = _binary_for(call, document)
    f = common.MachOFile(common.read_bytes(binary))
    index = f.pick(arg_str(call.args, "architecture"))[0]
    meta = objc.read(f.binaries[index], check=call.ctx.check)
    by_id = {o.id: o for o in objects}
    selector = arg_str(call.args, "selector")
    keep = (
        search.matcher({"pattern": selector, "mode": "literal", "case_sensitive": True})
        if selector
        else (lambda _s: True)
    )
    control = arg_str(call.args, "control")
    rows: list[UIAction] = []
    for c in connections:
        if c.kind != "action" or not c.selector or not keep(c.selector):
            continue
        if control and control not in (c.source, (by_id[c.source].label if c.source in by_id else None)):
            continue
        target_cls = c.destination_class
        if target_cls in (None, "FirstResponder"):
            rows.append(_row(c, by_id, "first-responder" if target_cls else "unresolved", None, []))
            continue
        assert target_cls is not None
        method, chain = implementation(meta, target_cls, c.selector)
        rows.append(_row(c, by_id, "resolved" if method else "not-implemented", method, chain))
    chosen, info = common.page(rows, call.args, "", 40)
    report = UIActionTrace(
        document=document.name,
        binary=binary.name,
        cpu_type=f.cpu(index),
        actions=chosen,
        page=info,
        counts={
            s: sum(1 for r in rows if r.status == s)
            for s in ("resolved", "not-implemented", "first-responder", "unresolved")
        },
    )
    return common.evidence(
        call,
        document,
        report,
        ["Actions sent to the first responder depend on the running responder chain: they are listed, not resolved."],
    )


def _row(
    c: IBConnection, by_id: dict[str, IBObject], status: str, method: objc.Method | None, chain: list[str]
) -> UIAction:
    src = by_id.get(c.source)
    return UIAction(
        control=c.source,
        control_class=src.class_name if src else None,
        control_label=src.label if src else None,
        event=c.event,
        selector=c.selector or "",
        target=c.destination,
        target_class=c.destination_class,
        status=status,  # type: ignore[arg-type]
        procedure=method.name if method else None,
        address=common.hexa(method.imp) if method and method.imp is not None else None,
        searched=chain,
    )

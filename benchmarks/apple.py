"""The time and result bytes of each Apple tool on a framework-sized Mach-O built here: CLASSES Objective-C classes
of METHODS methods (and ivars, properties, a protocol each) compiled for arm64-apple-ios14 with clang and linked as
a framework under @rpath in an .app bundle by ld64.lld, then ad-hoc signed by the linker.

Each tool runs with its default arguments (lean, paged): every answer must stay under 64 KB; the figures print as
a table. ``python benchmarks/apple.py [CLASSES]``.
"""

from __future__ import annotations

import functools
import json
import plistlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
CLASSES = int(sys.argv[1]) if len(sys.argv) > 1 else 400
METHODS = 12
LIMIT = 64 * 1024


def source(classes: int) -> str:
    head = """typedef struct objc_class *Class;
typedef struct objc_object { Class isa; } *id;
__attribute__((objc_root_class)) @interface Base { Class isa; } + (id)alloc; @end
@implementation Base + (id)alloc { return (id)0; } @end
"""
    parts = [head]
    for c in range(classes):
        sels = "\n".join(f"- (int)action{m}:(int)x;" for m in range(METHODS))
        impls = "\n".join(f"- (int)action{m}:(int)x {{ return x + {m} + _v{c % 7}; }}" for m in range(METHODS))
        parts.append(
            f"@protocol P{c} - (int)action0:(int)x; @end\n"
            f"@interface Gen{c} : Base <P{c}> {{ int _v{c % 7}; const char *_name; }}\n"
            f"@property (nonatomic) int value;\n{sels}\n+ (int)make{c};\n@end\n"
            f"@implementation Gen{c}\n@synthesize value = _v{c % 7};\n{impls}\n+ (int)make{c} {{ return {c}; }}\n@end\n"
        )
    return "\n".join(parts)


SWIFT_TYPES = 2000


def swift_source(types: int) -> str:
    """``types`` Swift struct records (three Int fields each) in __swift5_types/__swift5_fieldmd, written from the
    ABI layout as tests/apple/applefixtures.py does (no Swift compiler on Linux)."""
    out = ["  .section __TEXT,__cstring", '_m_name: .asciz "Bench"', '_int: .asciz "Si"']
    out += [f'_f{k}: .asciz "f{k}"' for k in range(3)]
    out += ["  .section __TEXT,__const", "  .p2align 2", "_mod:", "  .long 0", "  .long 0", "_mr: .long _m_name - _mr"]
    out += ["  .section __TEXT,__cstring"] + [f'_n{t}: .asciz "T{t}"' for t in range(types)]
    out += ["  .section __TEXT,__const", "  .p2align 2"]
    for t in range(types):
        out += [
            f"_d{t}:",
            "  .long 0x51",
            f"_p{t}: .long _mod - _p{t}",
            f"_q{t}: .long _n{t} - _q{t}",
            "  .long 0",
            f"_r{t}: .long _fd{t} - _r{t}",
            "  .long 3",
            "  .long 2",
        ]
    out += ["  .section __TEXT,__swift5_fieldmd", "  .p2align 2"]
    for t in range(types):
        out += [f"_fd{t}:", "  .long 0", "  .long 0", "  .short 0", "  .short 12", "  .long 3"]
        for k in range(3):
            out += ["  .long 2", f"_t{t}_{k}: .long _int - _t{t}_{k}", f"_u{t}_{k}: .long _f{k} - _u{t}_{k}"]
    out += ["  .section __TEXT,__swift5_types", "  .p2align 2"]
    out += [f"_s{t}: .long _d{t} - _s{t}" for t in range(types)]
    out += ["  .section __TEXT,__text", "  .globl _anchor", "_anchor:", "  retq"]
    return "\n".join(line for line in out if line) + "\n"


def storyboard(classes: int) -> str:
    """A storyboard with one scene per class, each with a button sending action0: to its view controller."""
    scenes = "\n".join(
        f"""<scene sceneID="S{c}"><objects><viewController id="VC{c}" customClass="Gen{c}"><view key="view" id="V{c}">
<subviews><button id="B{c}"><state key="normal" title="Go {c}"/><connections><action selector="action0:"
destination="VC{c}" eventType="touchUpInside" id="A{c}"/></connections></button></subviews></view>
</viewController></objects></scene>"""
        for c in range(classes)
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<document type="com.apple.InterfaceBuilder3.CocoaTouch.Storyboard.XIB" version="3.0" targetRuntime="iOS.CocoaTouch">
<scenes>{scenes}</scenes></document>
"""


def build(out: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests import toolchains
    from tests.apple import applefixtures as fx

    clang, lld = shutil.which("clang"), toolchains.find("ld64.lld")
    if clang is None or lld is None:
        raise SystemExit("clang and ld64.lld are needed (apt-get install clang lld)")
    (out / "libSystem.tbd").write_text(fx.LIBSYSTEM)
    (out / "libobjc.tbd").write_text(fx.LIBOBJC)
    (out / "big.m").write_text(source(CLASSES))
    (out / "main.c").write_text("int main(void) { return 0; }\n")
    app = out / "Big.app"
    fw = app / "Frameworks" / "Big.framework"
    fw.mkdir(parents=True)
    # The framework and the app that links it: one iOS target, the same SDK stubs.
    link_ios = functools.partial(fx.link_macho, clang, lld, out, "arm64-apple-ios14", "arm64", "ios", "14.0")
    link_ios(
        "big.m",
        fw / "Big",
        "-dylib",
        "-install_name",
        "@rpath/Big.framework/Big",
        "-adhoc_codesign",
        "libSystem.tbd",
        "libobjc.tbd",
    )
    link_ios("main.c", app / "Big", "libSystem.tbd", str(fw / "Big"), "-rpath", "@executable_path/Frameworks")
    (app / "Info.plist").write_bytes(plistlib.dumps({"CFBundleExecutable": "Big", "CFBundleIdentifier": "x.big"}))
    (fw / "Info.plist").write_bytes(plistlib.dumps({"CFBundleExecutable": "Big"}, fmt=plistlib.FMT_BINARY))
    (out / "archive.plist").write_bytes(fx.keyed_archive())
    (app / "Main.storyboard").write_text(storyboard(CLASSES))
    (out / "swift.s").write_text(swift_source(SWIFT_TYPES))
    swifty = out / "Swifty"
    fx.link_macho(
        clang, lld, out, "x86_64-apple-macos11", "x86_64", "macos", "11.0", "swift.s", swifty, "-dylib", "libSystem.tbd"
    )
    return app


def main() -> None:
    from rea.registry import default_registry
    from rea.session import Session
    from rea.testing import call_tool

    with tempfile.TemporaryDirectory(prefix="rea-apple-bench-") as tmp:
        started = time.monotonic()
        app = build(Path(tmp))
        framework = app / "Frameworks" / "Big.framework"
        print(
            f"built {CLASSES} classes x {METHODS + 2} methods ({(framework / 'Big').stat().st_size // 1024} KiB "
            f"framework) in {time.monotonic() - started:.1f} s"
        )
        calls = [
            ("inspect_macho", {"path": str(framework)}),
            ("list_architectures", {"path": str(framework)}),
            ("inspect_plist", {"path": str(framework)}),
            ("inspect_keyed_archive", {"path": str(Path(tmp) / "archive.plist")}),
            ("inspect_signature", {"path": str(framework)}),
            ("get_objc_classes", {"path": str(framework)}),
            ("get_objc_protocols", {"path": str(framework)}),
            ("inspect_native_dispatch_metadata", {"path": str(framework)}),
            ("trace_dylib_resolution", {"path": str(app)}),
            ("decode_interface_builder", {"path": str(app / "Main.storyboard")}),
            ("trace_native_ui_action", {"path": str(app / "Main.storyboard"), "binary_path": str(framework)}),
            ("demangle_swift", {"symbols": [f"$s5Bench2T{n}V" for n in range(1000)]}),
            ("analyze_swift_types", {"path": str(Path(tmp) / "Swifty")}),
            ("project_apple_application_graph", {"path": str(app)}),
        ]
        session = Session(default_registry())
        rows, over = [], []
        try:
            for name, args in calls:
                times = []
                for _ in range(2):  # the first call pays imports (LIEF, signify) and the file's hash
                    t0 = time.monotonic()
                    out = call_tool(session, name, args)
                    times.append(time.monotonic() - t0)
                assert out.evidence is not None
                size = len(msgspec.json.encode(out.evidence.normalized_result))
                rows.append((name, times[0], times[1], size))
                if size > LIMIT:
                    over.append(name)
        finally:
            session.close()
        print(f"{'tool':36} {'first s':>8} {'again s':>8} {'bytes':>8}")
        for name, first, again, size in rows:
            print(f"{name:36} {first:8.3f} {again:8.3f} {size:8d}")
        print(json.dumps({"classes": CLASSES, "methods": CLASSES * (METHODS + 2), "over_64kb": over}))
        if over:
            raise SystemExit(f"answers over 64 KB: {over}")


if __name__ == "__main__":
    main()

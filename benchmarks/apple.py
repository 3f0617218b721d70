"""The time and result bytes of each Apple tool on a framework-sized Mach-O built here: CLASSES Objective-C classes
of METHODS methods (and ivars, properties, a protocol each) compiled for arm64-apple-ios14 with clang and linked as
a framework under @rpath in an .app bundle by ld64.lld, then ad-hoc signed by the linker.

Each tool runs with its default arguments (lean, paged): every answer must stay under 64 KB; the figures print as
a table. ``python benchmarks/apple.py [CLASSES]``.
"""

from __future__ import annotations

import json
import plistlib
import shutil
import subprocess
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
    run = lambda cmd: subprocess.run(cmd, cwd=out, check=True, capture_output=True, timeout=1800)  # noqa: E731
    run([clang, "-target", "arm64-apple-ios14", "-O1", "-c", "big.m", "-o", "big.o"])
    run(
        [
            lld,
            "-arch",
            "arm64",
            "-platform_version",
            "ios",
            "14.0",
            "14.0",
            "-dylib",
            "-install_name",
            "@rpath/Big.framework/Big",
            "-adhoc_codesign",
            "-o",
            str(fw / "Big"),
            "big.o",
            "libSystem.tbd",
            "libobjc.tbd",
        ]
    )
    run([clang, "-target", "arm64-apple-ios14", "-O1", "-c", "main.c", "-o", "main.o"])
    run(
        [
            lld,
            "-arch",
            "arm64",
            "-platform_version",
            "ios",
            "14.0",
            "14.0",
            "-o",
            str(app / "Big"),
            "main.o",
            "libSystem.tbd",
            str(fw / "Big"),
            "-rpath",
            "@executable_path/Frameworks",
        ]
    )
    (app / "Info.plist").write_bytes(plistlib.dumps({"CFBundleExecutable": "Big", "CFBundleIdentifier": "x.big"}))
    (fw / "Info.plist").write_bytes(plistlib.dumps({"CFBundleExecutable": "Big"}, fmt=plistlib.FMT_BINARY))
    (out / "archive.plist").write_bytes(fx.keyed_archive())
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

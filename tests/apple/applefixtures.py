"""Apple fixtures built in the test session: Objective-C Mach-O (iOS arm64, macOS x86_64, fat, stripped, ad-hoc
signed by ld64.lld and a tampered copy), a bundle tree with frameworks under @rpath, plists, a keyed archive, a PE
signed by osslsigncode. No SDK: the root class is declared in the source, libSystem and libobjc are text stubs."""

from __future__ import annotations

import datetime
import plistlib
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests import toolchains

APP_M = r"""
typedef struct objc_class *Class;
typedef struct objc_object { Class isa; } *id;
extern int puts(const char *);
extern int kit_version(void);

@protocol Greeter
- (int)greet:(int)times;
@optional
- (void)wave;
@end

__attribute__((objc_root_class))
@interface RootObject { Class isa; }
+ (id)alloc;
- (id)init;
@end

@implementation RootObject
+ (id)alloc { return (id)0; }
- (id)init { return (id)self; }
@end

@interface Widget : RootObject <Greeter> {
  int _count;
  const char *_title;
}
@property (nonatomic) int count;
- (int)greet:(int)times;
- (void)buttonTapped:(id)sender;
@end

@implementation Widget
@synthesize count = _count;
- (int)greet:(int)times { puts("hello"); return times * 2 + _count; }
- (void)buttonTapped:(id)sender { puts("tapped"); }
+ (int)version { return 3; }
@end

@interface Widget (Extras)
- (int)extra;
@end
@implementation Widget (Extras)
- (int)extra { return kit_version(); }
@end

int main(void) { Widget *w = [Widget alloc]; return [w greet:2]; }
"""
KIT_M = "int kit_version(void) { return 42; }\n"
# What the source defines, as the metadata must report it.
CLASSES = {"RootObject": None, "Widget": "RootObject"}
WIDGET_METHODS = {
    "-[Widget greet:]",
    "-[Widget buttonTapped:]",
    "-[Widget count]",
    "-[Widget setCount:]",
    "+[Widget version]",
}
CATEGORY_METHOD = "-[Widget(Extras) extra]"

XIB = """<?xml version="1.0" encoding="UTF-8"?>
<document type="com.apple.InterfaceBuilder3.CocoaTouch.XIB" version="3.0" toolsVersion="21701"
    targetRuntime="iOS.CocoaTouch" propertyAccessControl="none" useAutolayout="YES">
    <objects>
        <placeholder placeholderIdentifier="IBFilesOwner" id="-1" userLabel="File's Owner" customClass="Widget">
            <connections>
                <outlet property="view" destination="i5M-Pr-FkT" id="sfx-zR-JGt"/>
            </connections>
        </placeholder>
        <placeholder placeholderIdentifier="IBFirstResponder" id="-2" customClass="UIResponder"/>
        <view contentMode="scaleToFill" id="i5M-Pr-FkT">
            <subviews>
                <button opaque="NO" contentMode="scaleToFill" buttonType="system" id="Tap-Btn-001">
                    <state key="normal" title="Tap me"/>
                    <connections>
                        <action selector="buttonTapped:" destination="-1" eventType="touchUpInside" id="act-tap-01"/>
                    </connections>
                </button>
                <button opaque="NO" contentMode="scaleToFill" buttonType="system" id="Cut-Btn-002">
                    <state key="normal" title="Cut"/>
                    <connections>
                        <action selector="cut:" destination="-2" eventType="touchUpInside" id="act-cut-02"/>
                    </connections>
                </button>
            </subviews>
        </view>
    </objects>
</document>
"""
STORYBOARD = """<?xml version="1.0" encoding="UTF-8"?>
<document type="com.apple.InterfaceBuilder3.CocoaTouch.Storyboard.XIB" version="3.0" toolsVersion="21701"
    targetRuntime="iOS.CocoaTouch" initialViewController="VC-1">
    <scenes>
        <scene sceneID="Scene-1">
            <objects>
                <viewController id="VC-1" customClass="Widget" customModule="Demo" sceneMemberID="viewController">
                    <view key="view" contentMode="scaleToFill" id="View-1">
                        <subviews>
                            <button opaque="NO" contentMode="scaleToFill" id="Greet-Btn">
                                <state key="normal" title="Greet"/>
                                <connections>
                                    <action selector="greet:" destination="VC-1" eventType="touchUpInside"
                                        id="act-greet"/>
                                </connections>
                            </button>
                            <button opaque="NO" contentMode="scaleToFill" id="Wave-Btn">
                                <state key="normal" title="Wave"/>
                                <connections>
                                    <action selector="wave" destination="VC-1" eventType="touchUpInside" id="act-wave"/>
                                    <segue destination="VC-2" kind="show" id="seg-1"/>
                                </connections>
                            </button>
                        </subviews>
                    </view>
                    <connections>
                        <outlet property="greetButton" destination="Greet-Btn" id="out-greet"/>
                    </connections>
                </viewController>
                <placeholder placeholderIdentifier="IBFirstResponder" id="FR-1" sceneMemberID="firstResponder"/>
            </objects>
        </scene>
        <scene sceneID="Scene-2">
            <objects>
                <viewController id="VC-2" customClass="RootObject" sceneMemberID="viewController"/>
            </objects>
        </scene>
    </scenes>
</document>
"""
# Swift type metadata as swiftc lays it out (no Swift compiler here: the records are written from the ABI's
# documented layout, Swift docs/ABI/TypeMetadata.rst): a struct Demo.Point {var x, y: Int}, a class Demo.Shape: Base
# {var name: String; var origin: Point}, an enum Demo.Direction {north, south}, and one Swift-mangled function.
SWIFT_S = """  .section __TEXT,__const
  .p2align 2
_sw_mod:
  .long 0
  .long 0
_sw_r0:
  .long _sw_mod_name - _sw_r0
_sw_point:
  .long 0x51
_sw_r1:
  .long _sw_mod - _sw_r1
_sw_r2:
  .long _sw_point_name - _sw_r2
  .long 0
_sw_r3:
  .long _sw_point_fields - _sw_r3
  .long 2
  .long 2
_sw_shape:
  .long 0x80000050
_sw_r4:
  .long _sw_mod - _sw_r4
_sw_r5:
  .long _sw_shape_name - _sw_r5
  .long 0
_sw_r6:
  .long _sw_shape_fields - _sw_r6
_sw_r7:
  .long _sw_shape_super - _sw_r7
_sw_dir:
  .long 0x52
_sw_r8:
  .long _sw_mod - _sw_r8
_sw_r9:
  .long _sw_dir_name - _sw_r9
  .long 0
_sw_r10:
  .long _sw_dir_fields - _sw_r10
  .long 0
  .long 2

  .section __TEXT,__swift5_fieldmd
  .p2align 2
_sw_point_fields:
_sw_r11:
  .long _sw_point_mangled - _sw_r11
  .long 0
  .short 0
  .short 12
  .long 2
  .long 2
_sw_r12:
  .long _sw_int_mangled - _sw_r12
_sw_r13:
  .long _sw_x_name - _sw_r13
  .long 2
_sw_r14:
  .long _sw_int_mangled - _sw_r14
_sw_r15:
  .long _sw_y_name - _sw_r15
_sw_shape_fields:
_sw_r16:
  .long _sw_shape_mangled - _sw_r16
_sw_r17:
  .long _sw_shape_super - _sw_r17
  .short 1
  .short 12
  .long 2
  .long 2
_sw_r18:
  .long _sw_str_mangled - _sw_r18
_sw_r19:
  .long _sw_name_name - _sw_r19
  .long 2
_sw_r20:
  .long _sw_point_mangled - _sw_r20
_sw_r21:
  .long _sw_origin_name - _sw_r21
_sw_dir_fields:
_sw_r22:
  .long _sw_dir_mangled - _sw_r22
  .long 0
  .short 3
  .short 12
  .long 2
  .long 0
  .long 0
_sw_r23:
  .long _sw_north_name - _sw_r23
  .long 0
  .long 0
_sw_r24:
  .long _sw_south_name - _sw_r24

  .section __TEXT,__swift5_types
  .p2align 2
_sw_r25:
  .long _sw_point - _sw_r25
_sw_r26:
  .long _sw_shape - _sw_r26
_sw_r27:
  .long _sw_dir - _sw_r27

  .section __TEXT,__swift5_reflstr
_sw_x_name: .asciz "x"
_sw_y_name: .asciz "y"
_sw_name_name: .asciz "name"
_sw_origin_name: .asciz "origin"
_sw_north_name: .asciz "north"
_sw_south_name: .asciz "south"
  .section __TEXT,__swift5_typeref
_sw_int_mangled: .asciz "Si"
_sw_str_mangled: .asciz "SS"
_sw_point_mangled: .asciz "4Demo5PointV"
_sw_shape_mangled: .asciz "4Demo5ShapeC"
_sw_shape_super: .asciz "4Demo4BaseC"
_sw_dir_mangled: .asciz "4Demo9DirectionO"
  .section __TEXT,__cstring
_sw_mod_name: .asciz "Demo"
_sw_point_name: .asciz "Point"
_sw_shape_name: .asciz "Shape"
_sw_dir_name: .asciz "Direction"

  .section __TEXT,__text
  .globl "_$s4Demo5PointV4normSiyF"
"_$s4Demo5PointV4normSiyF":
  movq %rdi, %rax
  addq %rsi, %rax
  retq
"""
SWIFT_NORM = "$s4Demo5PointV4normSiyF"
_TBD = """--- !tapi-tbd
tbd-version:     4
targets:         [ x86_64-macos, arm64-macos, arm64-ios ]
install-name:    '{name}'
current-version: {version}
exports:
  - targets:     [ x86_64-macos, arm64-macos, arm64-ios ]
    symbols:     [ {symbols} ]
...
"""
LIBSYSTEM = _TBD.format(name="/usr/lib/libSystem.B.dylib", version=1311, symbols="_puts, dyld_stub_binder")
LIBOBJC = _TBD.format(
    name="/usr/lib/libobjc.A.dylib", version=228, symbols="_objc_msgSend, _objc_alloc, __objc_empty_cache"
)
TOOLS = ("clang", "ld64.lld", "llvm-lipo", "llvm-strip")


@dataclass(frozen=True)
class Built:
    ios: Path  # arm64-apple-ios14, symbols kept
    macos: Path  # x86_64-apple-macos11
    fat: Path  # both, by llvm-lipo
    stripped: Path  # ios with local symbols removed (llvm-strip -x): method names only in the metadata
    signed: Path  # arm64-apple-macos11, ad-hoc signed by ld64.lld
    tampered: Path  # signed, one byte of __text changed
    app: Path  # Demo.app: Demo (ios), Frameworks/Kit.framework/Kit, Info.plist (binary), Settings.plist (XML)
    xml_plist: Path
    keyed_archive: Path
    ipa: Path  # Demo.ipa: Payload/Demo.app zipped
    swift: Path  # x86_64 dylib with __swift5_types and __swift5_fieldmd records and a Swift-mangled function
    xib: Path  # Demo.app/Base.lproj/Widget.xib: File's Owner is a Widget, its button sends buttonTapped:
    storyboard: Path  # Demo.app/Base.lproj/Main.storyboard: a Widget scene whose buttons send greet: and wave


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")


def link_macho(
    clang: str,
    lld: str,
    out: Path,
    target: str,
    arch: str,
    platform: str,
    version: str,
    source: str,
    dest: Path,
    *extra: str,
) -> None:
    """``source`` (in ``out``) compiled by clang -O1 for ``target`` and linked by ld64.lld into ``dest`` for ``arch`` on
    ``platform`` ``version``, with ``extra`` linker arguments."""
    o = str(out / f"{dest.name}-{arch}-{platform}.o")  # beside the build, never inside the bundle
    _run([clang, "-target", target, "-O1", "-c", source, "-o", o], out)
    _run([lld, "-arch", arch, "-platform_version", platform, version, version, "-o", str(dest), o, *extra], out)


def build(out: Path) -> Built:
    tools = toolchains.require_all(TOOLS)
    clang, lld = tools["clang"], tools["ld64.lld"]
    (out / "app.m").write_text(APP_M)
    (out / "kit.m").write_text(KIT_M)
    (out / "libSystem.tbd").write_text(LIBSYSTEM)
    (out / "libobjc.tbd").write_text(LIBOBJC)
    app = out / "Demo.app"
    kit_dir = app / "Frameworks" / "Kit.framework"
    kit_dir.mkdir(parents=True)
    kit = kit_dir / "Kit"

    def link(target: str, arch: str, platform: str, version: str, source: str, dest: Path, *extra: str) -> None:
        link_macho(clang, lld, out, target, arch, platform, version, source, dest, *extra)

    link(
        "arm64-apple-ios14",
        "arm64",
        "ios",
        "14.0",
        "kit.m",
        kit,
        "-dylib",
        "-install_name",
        "@rpath/Kit.framework/Kit",
        "libSystem.tbd",
    )
    common = ["libSystem.tbd", "libobjc.tbd", str(kit), "-rpath", "@executable_path/Frameworks"]
    ios = out / "demo-ios"
    link("arm64-apple-ios14", "arm64", "ios", "14.0", "app.m", ios, *common)
    kit_mac = out / "Kit-macos"
    link(
        "x86_64-apple-macos11",
        "x86_64",
        "macos",
        "11.0",
        "kit.m",
        kit_mac,
        "-dylib",
        "-install_name",
        "@rpath/Kit.framework/Kit",
        "libSystem.tbd",
    )
    macos = out / "demo-macos"
    link(
        "x86_64-apple-macos11", "x86_64", "macos", "11.0", "app.m", macos, "libSystem.tbd", "libobjc.tbd", str(kit_mac)
    )
    fat = out / "demo-fat"
    _run([tools["llvm-lipo"], "-create", str(macos), str(ios), "-output", str(fat)], out)
    stripped = out / "demo-stripped"
    _run([tools["llvm-strip"], "-x", "-o", str(stripped), str(ios)], out)
    kit_arm = out / "Kit-arm64-macos"
    link(
        "arm64-apple-macos11",
        "arm64",
        "macos",
        "11.0",
        "kit.m",
        kit_arm,
        "-dylib",
        "-install_name",
        "@rpath/Kit.framework/Kit",
        "libSystem.tbd",
    )
    signed = out / "demo-signed"
    link(
        "arm64-apple-macos11",
        "arm64",
        "macos",
        "11.0",
        "app.m",
        signed,
        "libSystem.tbd",
        "libobjc.tbd",
        str(kit_arm),
        "-adhoc_codesign",
    )
    tampered = out / "demo-tampered"
    data = bytearray(signed.read_bytes())
    text = _text_offset(data)
    data[text + 4] ^= 0xFF  # page 4 of the signed code: the instruction stream of the first method
    tampered.write_bytes(bytes(data))
    shutil.copyfile(ios, app / "Demo")
    (app / "Demo").chmod(0o755)
    info = {
        "CFBundleExecutable": "Demo",
        "CFBundleIdentifier": "com.example.demo",
        "CFBundleShortVersionString": "1.0",
        "UIDeviceFamily": [1, 2],
        "NSAppTransportSecurity": {"NSAllowsArbitraryLoads": True},
    }
    (app / "Info.plist").write_bytes(plistlib.dumps(info, fmt=plistlib.FMT_BINARY))
    (kit_dir / "Info.plist").write_bytes(
        plistlib.dumps({"CFBundleExecutable": "Kit", "CFBundleIdentifier": "com.example.kit"})
    )
    settings = {
        "Server": "https://example.invalid",
        "Retries": 3,
        "Blob": b"\x00\x01\x02",
        "When": datetime.datetime(2024, 1, 2, 3, 4, 5),
    }
    xml_plist = app / "Settings.plist"
    xml_plist.write_bytes(plistlib.dumps(settings))
    keyed = out / "state.plist"
    keyed.write_bytes(keyed_archive())
    (out / "swift.s").write_text(SWIFT_S)
    swift = out / "Swifty"
    link(
        "x86_64-apple-macos11",
        "x86_64",
        "macos",
        "11.0",
        "swift.s",
        swift,
        "-dylib",
        "-install_name",
        "@rpath/Swifty.dylib",
        "libSystem.tbd",
    )
    lproj = app / "Base.lproj"
    lproj.mkdir()
    (lproj / "Widget.xib").write_text(XIB)
    (lproj / "Main.storyboard").write_text(STORYBOARD)
    appex = app / "PlugIns" / "Share.appex"
    appex.mkdir(parents=True)
    shutil.copyfile(ios, appex / "Share")
    (appex / "Info.plist").write_bytes(
        plistlib.dumps({"CFBundleExecutable": "Share", "CFBundleIdentifier": "com.example.demo.share"})
    )
    ipa = out / "Demo.ipa"
    with zipfile.ZipFile(ipa, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(app.rglob("*")):
            if path.is_file():
                zf.write(path, f"Payload/Demo.app/{path.relative_to(app)}")
    return Built(
        ipa=ipa,
        ios=ios,
        macos=macos,
        fat=fat,
        stripped=stripped,
        signed=signed,
        tampered=tampered,
        app=app,
        xml_plist=xml_plist,
        keyed_archive=keyed,
        swift=swift,
        xib=lproj / "Widget.xib",
        storyboard=lproj / "Main.storyboard",
    )


def _text_offset(data: bytes | bytearray) -> int:
    import lief

    fat = lief.MachO.parse(bytes(data))  # held: the slice lives as long as the parsed file
    return int(fat.at(0).get_section("__text").offset)


def keyed_archive() -> bytes:
    """An NSKeyedArchiver archive written by bpylist2: a dictionary holding an array, a string and a number."""
    from bpylist2 import archiver

    return archiver.archive({"title": "Demo", "items": ["a", "b"], "count": 2})


def recursive_archive() -> bytes:
    """An archive whose object 1 (an NSArray) contains itself: a recursive keyed archive."""
    plist = {
        "$archiver": "NSKeyedArchiver",
        "$version": 100000,
        "$top": {"root": plistlib.UID(1)},
        "$objects": [
            "$null",
            {"NS.objects": [plistlib.UID(1)], "$class": plistlib.UID(2)},
            {"$classname": "NSArray", "$classes": ["NSArray", "NSObject"]},
        ],
    }
    return plistlib.dumps(plist, fmt=plistlib.FMT_BINARY)


SIGNER_CN = "rea test signer"


def signed_pe(out: Path) -> tuple[Path, Path, Path]:
    """(signed, tampered, unsigned) PE files: a mingw-built program signed by osslsigncode with a self-signed
    certificate made here; the tampered copy has one byte of its code changed after signing."""
    tools = toolchains.require_all(("x86_64-w64-mingw32-gcc", "osslsigncode"))
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, SIGNER_CN), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "rea")]
    )
    now = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(0x5EA)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    (out / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (out / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    (out / "hello.c").write_text('#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n')
    unsigned = out / "hello.exe"
    _run([tools["x86_64-w64-mingw32-gcc"], "-O1", "-o", str(unsigned), "hello.c"], out)
    signed = out / "hello-signed.exe"
    _run(
        [
            tools["osslsigncode"],
            "sign",
            "-certs",
            "cert.pem",
            "-key",
            "key.pem",
            "-h",
            "sha256",
            "-in",
            str(unsigned),
            "-out",
            str(signed),
        ],
        out,
    )
    data = bytearray(signed.read_bytes())
    data[0x400 + 16] ^= 0xFF  # inside .text (the first section's file data)
    tampered = out / "hello-tampered.exe"
    tampered.write_bytes(bytes(data))
    return signed, tampered, unsigned


ENTITLEMENTS = {
    "com.apple.security.app-sandbox": True,
    "com.apple.security.network.client": True,
    "keychain-access-groups": ["ABCDE12345.com.example.demo"],
}
TEAM_ID = "ABCDE12345"


def _tlv(tag: int, content: bytes) -> bytes:
    n = len(content)
    size = (
        bytes([n]) if n < 128 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes((n.bit_length() + 7) // 8)
    )
    return bytes([tag]) + size + content


def der_entitlements(value: object) -> bytes:
    """Entitlements in Apple's DER form: [APPLICATION 16] {INTEGER 1, [CONTEXT 16] {SEQUENCE {key, value}...}}."""

    def enc(v: object) -> bytes:
        if isinstance(v, bool):
            return _tlv(0x01, b"\xff" if v else b"\x00")
        if isinstance(v, str):
            return _tlv(0x0C, v.encode())
        if isinstance(v, list):
            return _tlv(0x30, b"".join(enc(x) for x in v))
        assert isinstance(v, dict)
        return _tlv(0xB0, b"".join(_tlv(0x30, enc(k) + enc(x)) for k, x in sorted(v.items())))

    return _tlv(0x70, _tlv(0x02, b"\x01") + enc(value))


def resign(signed: Path, out: Path, info_plist: bytes | None = None) -> Path:
    """``signed`` (ld64.lld's ad-hoc signature) signed again from the documented layout, as codesign would with
    entitlements, hardened runtime and a team id: the SuperBlob grows, so LC_CODE_SIGNATURE's size and __LINKEDIT's
    sizes are raised first, then the code directory hashes the pages up to the signature."""
    import struct

    import lief

    from rea_plugins.apple import codesign

    data = bytearray(signed.read_bytes())
    fat = lief.MachO.parse(bytes(data))
    b = fat.at(0)
    sig_cmd = b.code_signature
    dataoff = int(sig_cmd.data_offset)
    ent = codesign.blob(codesign.ENTITLEMENTS, plistlib.dumps(ENTITLEMENTS))
    req = codesign.blob(codesign.REQUIREMENTS, struct.pack(">I", 0))
    der = codesign.blob(codesign.DER_ENTITLEMENTS, der_entitlements(ENTITLEMENTS))
    cms = codesign.blob(codesign.CMS, b"")
    # The code directory's size does not depend on the bytes it hashes: size the SuperBlob with a placeholder.
    probe = codesign.build_code_directory(
        bytes(dataoff),
        "com.example.demo",
        flags=0x10000,
        team_id=TEAM_ID,
        specials={2: req, 5: ent, 7: der, **({1: info_plist} if info_plist else {})},
    )
    size = len(codesign.build_superblob([(0, probe), (2, req), (5, ent), (7, der), (0x10000, cms)]))
    size = (size + 15) & ~15
    struct.pack_into("<I", data, int(sig_cmd.command_offset) + 12, size)
    linkedit = b.get_segment("__LINKEDIT")
    seg_at = int(linkedit.command_offset)
    new_filesize = dataoff + size - int(linkedit.file_offset)
    struct.pack_into("<QQ", data, seg_at + 32, (new_filesize + 0x3FFF) & ~0x3FFF, int(linkedit.file_offset))
    struct.pack_into("<Q", data, seg_at + 48, new_filesize)
    del data[dataoff:]
    cd = codesign.build_code_directory(
        bytes(data),
        "com.example.demo",
        flags=0x10000,
        team_id=TEAM_ID,
        specials={2: req, 5: ent, 7: der, **({1: info_plist} if info_plist else {})},
    )
    blob = codesign.build_superblob([(0, cd), (2, req), (5, ent), (7, der), (0x10000, cms)])
    data += blob + bytes(size - len(blob))
    out.write_bytes(bytes(data))
    return out

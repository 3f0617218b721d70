"""An Android application in two versions, built from smali and manifest sources in the session.

Tools: apktool, apksigner, keytool and an aarch64 gcc for the native library.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

from tests import toolchains

PACKAGE = "com.example.rea"
URL = "https://api.example.test/v1/token"
LIBRARY = "reanative"
KEY_PASSWORD = "rea-test-only"

PERMISSIONS = ("android.permission.INTERNET", "android.permission.ACCESS_FINE_LOCATION")
# What the second version adds: a permission held below API 29 only, and one more permission.
V2_PERMISSIONS = '    <uses-permission android:name="android.permission.ACCESS_BACKGROUND_LOCATION"/>\n'
V2_STORAGE = "android.permission.WRITE_EXTERNAL_STORAGE"


def manifest(version: int = 1) -> str:
    """The manifest of version 1, or of version 2 (newer, debuggable, no backup, a maxSdkVersion, more permissions,
    the receiver no longer exported)."""
    code, name = ("7", "1.2.3") if version == 1 else ("8", "1.3.0")
    uses = "".join(f'    <uses-permission android:name="{p}"/>\n' for p in PERMISSIONS)
    if version == 2:
        uses += V2_PERMISSIONS + f'    <uses-permission android:name="{V2_STORAGE}" android:maxSdkVersion="28"/>\n'
    debuggable = ' android:debuggable="true" android:allowBackup="false"' if version == 2 else ""
    max_sdk = ' android:maxSdkVersion="34"' if version == 2 else ""
    receiver = ' android:exported="false"' if version == 2 else ""
    return f"""<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="{PACKAGE}"
    android:versionCode="{code}" android:versionName="{name}">
    <uses-sdk android:minSdkVersion="24" android:targetSdkVersion="33"{max_sdk}/>
    <permission android:name="{PACKAGE}.permission.SYNC" android:protectionLevel="signature"/>
{uses}    <application android:label="@string/app_name"{debuggable}>
        <activity android:name=".MainActivity" android:exported="true">
            <intent-filter>
                <action android:name="android.intent.action.MAIN"/>
                <category android:name="android.intent.category.LAUNCHER"/>
            </intent-filter>
            <intent-filter>
                <action android:name="android.intent.action.VIEW"/>
                <category android:name="android.intent.category.BROWSABLE"/>
                <data android:scheme="reafixture" android:host="open"/>
            </intent-filter>
        </activity>
        <service android:name="{PACKAGE}.SyncService" android:exported="false"
            android:permission="{PACKAGE}.permission.SYNC"/>
        <receiver android:name=".BootReceiver"{receiver}>
            <intent-filter>
                <action android:name="android.intent.action.BOOT_COMPLETED"/>
            </intent-filter>
        </receiver>
    </application>
</manifest>
"""


MANIFEST = manifest(1)

APKTOOL_YML = """version: 2.7.0
apkFileName: fixture.apk
isFrameworkApk: false
usesFramework:
  ids:
  - 1
sdkInfo:
  minSdkVersion: '24'
  targetSdkVersion: '33'
packageInfo:
  forcedPackageId: '127'
versionInfo:
  versionCode: '7'
  versionName: 1.2.3
doNotCompress:
- so
"""

STRINGS_XML = """<?xml version="1.0" encoding="utf-8"?>
<resources>
    <string name="app_name">Rea Fixture</string>
    <string name="api_host">api.example.test</string>
</resources>
"""

# Two versions of one method: greet(String) builds a greeting, greet(int) answers 42 or delegates.
GREETER = """.class public Lcom/example/rea/Greeter;
.super Ljava/lang/Object;
.source "Greeter.java"

.field public static final PREFIX:Ljava/lang/String; = "Hello, "
.field private count:I

.method public constructor <init>()V
    .registers 1
    invoke-direct {p0}, Ljava/lang/Object;-><init>()V
    return-void
.end method

.method public greet(Ljava/lang/String;)Ljava/lang/String;
    .registers 4
    iget v0, p0, Lcom/example/rea/Greeter;->count:I
    add-int/lit8 v0, v0, 0x1
    iput v0, p0, Lcom/example/rea/Greeter;->count:I
    new-instance v0, Ljava/lang/StringBuilder;
    invoke-direct {v0}, Ljava/lang/StringBuilder;-><init>()V
    const-string v1, "Hello, "
    invoke-virtual {v0, v1}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v0, p1}, Ljava/lang/StringBuilder;->append(Ljava/lang/String;)Ljava/lang/StringBuilder;
    invoke-virtual {v0}, Ljava/lang/StringBuilder;->toString()Ljava/lang/String;
    move-result-object v0
    return-object v0
.end method

.method public greet(I)Ljava/lang/String;
    .registers 4
    const/16 v0, 0x2a
    if-ne p1, v0, :other
    const-string v1, "the answer"
    return-object v1
    :other
    invoke-static {p1}, Ljava/lang/String;->valueOf(I)Ljava/lang/String;
    move-result-object v1
    invoke-virtual {p0, v1}, Lcom/example/rea/Greeter;->greet(Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    return-object v1
.end method
"""

MAIN_ACTIVITY = f""".class public Lcom/example/rea/MainActivity;
.super Landroid/app/Activity;
.source "MainActivity.java"

.method static constructor <clinit>()V
    .registers 1
    const-string v0, "{LIBRARY}"
    invoke-static {{v0}}, Ljava/lang/System;->loadLibrary(Ljava/lang/String;)V
    return-void
.end method

.method public constructor <init>()V
    .registers 1
    invoke-direct {{p0}}, Landroid/app/Activity;-><init>()V
    return-void
.end method

.method public native stringFromJNI()Ljava/lang/String;
.end method

.method protected onCreate(Landroid/os/Bundle;)V
    .registers 5
    invoke-super {{p0, p1}}, Landroid/app/Activity;->onCreate(Landroid/os/Bundle;)V
    new-instance v0, Lcom/example/rea/Greeter;
    invoke-direct {{v0}}, Lcom/example/rea/Greeter;-><init>()V
    const-string v1, "{URL}"
    invoke-virtual {{v0, v1}}, Lcom/example/rea/Greeter;->greet(Ljava/lang/String;)Ljava/lang/String;
    move-result-object v1
    const-string v2, "ReaFixture"
    invoke-static {{v2, v1}}, Landroid/util/Log;->i(Ljava/lang/String;Ljava/lang/String;)I
    return-void
.end method
"""

SYNC_SERVICE = """.class public Lcom/example/rea/SyncService;
.super Landroid/app/Service;
.implements Ljava/lang/Runnable;
.source "SyncService.java"

.annotation runtime Ljava/lang/Deprecated;
.end annotation

.method public constructor <init>()V
    .registers 1
    invoke-direct {p0}, Landroid/app/Service;-><init>()V
    return-void
.end method

.method public onBind(Landroid/content/Intent;)Landroid/os/IBinder;
    .registers 3
    const/4 v0, 0x0
    return-object v0
.end method

.method public run()V
    .registers 3
    new-instance v0, Lcom/example/rea/Greeter;
    invoke-direct {v0}, Lcom/example/rea/Greeter;-><init>()V
    const/16 v1, 0x2a
    invoke-virtual {v0, v1}, Lcom/example/rea/Greeter;->greet(I)Ljava/lang/String;
    return-void
.end method
"""

BOOT_RECEIVER = """.class public Lcom/example/rea/BootReceiver;
.super Landroid/content/BroadcastReceiver;
.source "BootReceiver.java"

.method public constructor <init>()V
    .registers 1
    invoke-direct {p0}, Landroid/content/BroadcastReceiver;-><init>()V
    return-void
.end method

.method public onReceive(Landroid/content/Context;Landroid/content/Intent;)V
    .registers 3
    return-void
.end method
"""

# A framework API call: which application methods call LocationManager.requestLocationUpdates.
LOCATION_TRACKER = """.class public Lcom/example/rea/LocationTracker;
.super Ljava/lang/Object;
.implements Landroid/location/LocationListener;
.source "LocationTracker.java"

.method public constructor <init>()V
    .registers 1
    invoke-direct {p0}, Ljava/lang/Object;-><init>()V
    return-void
.end method

.method public start(Landroid/content/Context;)V
    .registers 8
    const-string v0, "location"
    invoke-virtual {p1, v0}, Landroid/content/Context;->getSystemService(Ljava/lang/String;)Ljava/lang/Object;
    move-result-object v0
    check-cast v0, Landroid/location/LocationManager;
    const-string v1, "gps"
    const-wide/16 v2, 0x3e8
    const/4 v4, 0x0
    move-object v5, p0
    invoke-virtual/range {v0 .. v5}, Landroid/location/LocationManager;->requestLocationUpdates(\
Ljava/lang/String;JFLandroid/location/LocationListener;)V
    return-void
.end method

.method public onLocationChanged(Landroid/location/Location;)V
    .registers 3
    sget v0, Landroid/os/Build$VERSION;->SDK_INT:I
    return-void
.end method
"""

# A loop, a branch and a caught exception: the shapes a decompiler has to structure.
CHECKSUM = """.class public Lcom/example/rea/Checksum;
.super Ljava/lang/Object;
.source "Checksum.java"

.method public static sum([B)I
    .registers 5
    const/4 v0, 0x0
    const/4 v1, 0x0
    :loop
    array-length v2, p0
    if-ge v1, v2, :done
    aget-byte v2, p0, v1
    and-int/lit16 v2, v2, 0xff
    mul-int/lit8 v3, v0, 0x1f
    add-int v0, v3, v2
    add-int/lit8 v1, v1, 0x1
    goto :loop
    :done
    return v0
.end method

.method public static parse(Ljava/lang/String;)I
    .registers 3
    :try_start
    invoke-static {p0}, Ljava/lang/Integer;->parseInt(Ljava/lang/String;)I
    move-result v0
    :try_end
    .catch Ljava/lang/NumberFormatException; {:try_start .. :try_end} :bad
    return v0
    :bad
    move-exception v1
    const-string v1, "checksum: not a number"
    const/4 v0, -0x1
    return v0
.end method
"""

# What DAD garbled: a switch returning a string beyond the BMP, a synchronized block, a double literal.
SHAPES = """.class public Lcom/example/rea/Shapes;
.super Ljava/lang/Object;

.field private lock:Ljava/lang/Object;

.method public static pick(I)Ljava/lang/String;
    .registers 2
    packed-switch p0, :table
    const-string v0, "other"
    return-object v0
    :one
    const-string v0, "one"
    return-object v0
    :two
    const-string v0, "zw\\u00f6lf \\ud83d\\ude00"
    return-object v0
    :table
    .packed-switch 0x1
        :one
        :two
    .end packed-switch
.end method

.method public guarded(J)J
    .registers 6
    iget-object v0, p0, Lcom/example/rea/Shapes;->lock:Ljava/lang/Object;
    monitor-enter v0
    :try_start
    const-wide/16 v2, 0x2
    mul-long/2addr v2, p1
    monitor-exit v0
    :try_end
    .catchall {:try_start .. :try_end} :catch_all
    return-wide v2
    :catch_all
    move-exception v1
    monitor-exit v0
    throw v1
.end method

.method public static nested([[I)I
    .registers 7
    const/4 v0, 0x0
    const/4 v1, 0x0
    :outer
    array-length v2, p0
    if-ge v1, v2, :done
    aget-object v3, p0, v1
    const/4 v4, 0x0
    :inner
    array-length v5, v3
    if-ge v4, v5, :next
    aget v5, v3, v4
    if-lez v5, :skip
    add-int/2addr v0, v5
    :skip
    add-int/lit8 v4, v4, 0x1
    goto :inner
    :next
    add-int/lit8 v1, v1, 0x1
    goto :outer
    :done
    return v0
.end method

.method public static ratio(F)D
    .registers 5
    float-to-double v0, p0
    const-wide v2, 0x3ff8000000000000L
    mul-double/2addr v0, v2
    return-wide v0
.end method
"""

# Version 2: greet(int) answers for 43 instead of 42, and a new class sends telemetry.
GREETER_V2 = GREETER.replace("const/16 v0, 0x2a", "const/16 v0, 0x2b")
TELEMETRY_URL = "https://telemetry.example.test/collect"
TELEMETRY = f""".class public Lcom/example/rea/Telemetry;
.super Ljava/lang/Object;
.source "Telemetry.java"

.method public constructor <init>()V
    .registers 1
    invoke-direct {{p0}}, Ljava/lang/Object;-><init>()V
    return-void
.end method

.method public endpoint()Ljava/lang/String;
    .registers 2
    const-string v0, "{TELEMETRY_URL}"
    return-object v0
.end method
"""

SMALI = {
    "Greeter": GREETER,
    "MainActivity": MAIN_ACTIVITY,
    "SyncService": SYNC_SERVICE,
    "BootReceiver": BOOT_RECEIVER,
    "LocationTracker": LOCATION_TRACKER,
    "Checksum": CHECKSUM,
    "Shapes": SHAPES,
}
SMALI_V2 = {**SMALI, "Greeter": GREETER_V2, "Telemetry": TELEMETRY}
NATIVE_C = 'const char *rea_native_token(void) { return "native-token"; }\n'
NATIVE_C_V2 = 'const char *rea_native_token(void) { return "native-token-2"; }\n'


def _run(argv: list[str], cwd: Path) -> None:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(argv[0]).name} failed: {proc.stderr.strip()[-2000:]}")


def build_apk(out: Path, version: int = 1, extra: dict[str, str] | None = None, name: str = "") -> Path:
    """Assemble version 1 (or 2) with apktool, sign it (v1, v2, v3) with a session key; return the APK.

    Version 2 (``fixture-v2.apk``) changes one method, adds a class and permissions, is debuggable, carries a
    rebuilt native library and is signed with a second key: what compare_android_packages must find. ``extra``
    adds smali sources (relative path under com/example/rea -> source), ``name`` names the build (the benchmark's
    scaled application).
    """
    tools = toolchains.require_all(("apktool", "apksigner", "keytool", "aarch64-linux-gnu-gcc"))
    suffix = ("" if version == 1 else f"-v{version}") + (f"-{name}" if name else "")
    app = out / f"app{suffix}"
    (app / "smali" / "com" / "example" / "rea").mkdir(parents=True)
    (app / "res" / "values").mkdir(parents=True)
    (app / "lib" / "arm64-v8a").mkdir(parents=True)
    (app / "AndroidManifest.xml").write_text(manifest(version))
    (app / "apktool.yml").write_text(APKTOOL_YML)
    (app / "res" / "values" / "strings.xml").write_text(STRINGS_XML)
    for rel, source in {**(SMALI if version == 1 else SMALI_V2), **(extra or {})}.items():
        smali = app / "smali" / "com" / "example" / "rea" / f"{rel}.smali"
        smali.parent.mkdir(parents=True, exist_ok=True)
        smali.write_text(source)
    (out / f"native{suffix}.c").write_text(NATIVE_C if version == 1 else NATIVE_C_V2)
    _run(
        [
            tools["aarch64-linux-gnu-gcc"],
            "-shared",
            "-fPIC",
            "-O1",
            "-o",
            str(app / "lib" / "arm64-v8a" / f"lib{LIBRARY}.so"),
            str(out / f"native{suffix}.c"),
        ],
        out,
    )
    # apktool keeps its framework under HOME; a private one keeps the session's HOME clean.
    unsigned = out / f"unsigned{suffix}.apk"
    _run([tools["apktool"], "b", "--frame-path", str(out / "framework"), "-o", str(unsigned), str(app)], out)
    keystore = out / f"debug{suffix}.p12"
    _run(
        [
            tools["keytool"],
            "-genkeypair",
            "-keystore",
            str(keystore),
            "-storetype",
            "PKCS12",
            "-alias",
            "rea",
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-validity",
            "3650",
            "-dname",
            f"CN=rea test {version},O=rea",
            "-storepass",
            KEY_PASSWORD,
            "-keypass",
            KEY_PASSWORD,
        ],
        out,
    )
    apk = out / f"fixture{suffix}.apk"
    _run(
        [
            tools["apksigner"],
            "sign",
            "--ks",
            str(keystore),
            "--ks-pass",
            f"pass:{KEY_PASSWORD}",
            "--ks-key-alias",
            "rea",
            "--v1-signing-enabled",
            "true",
            "--v2-signing-enabled",
            "true",
            "--v3-signing-enabled",
            "true",
            "--min-sdk-version",
            "24",
            "--out",
            str(apk),
            str(unsigned),
        ],
        out,
    )
    return apk


def certificate_sha256(out: Path, version: int = 1) -> str:
    """The debug key's certificate fingerprint, as keytool prints it (lowercase, no colons)."""
    tools = toolchains.require_all(("keytool",))
    proc = subprocess.run(
        [
            tools["keytool"],
            "-list",
            "-v",
            "-keystore",
            str(out / ("debug.p12" if version == 1 else f"debug-v{version}.p12")),
            "-storepass",
            KEY_PASSWORD,
            "-alias",
            "rea",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    for line in proc.stdout.splitlines():
        if line.strip().startswith("SHA256:"):
            return line.split(":", 1)[1].strip().replace(":", "").lower()
    raise RuntimeError("keytool printed no SHA256 fingerprint")


def extract(apk: Path, name: str, dest: Path) -> Path:
    with zipfile.ZipFile(apk) as zf:
        dest.write_bytes(zf.read(name))
    return dest


def copy(src: Path, dest: Path) -> Path:
    shutil.copyfile(src, dest)
    return dest

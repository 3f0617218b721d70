"""An Android application built from smali and manifest sources in the test session (apktool, apksigner, keytool)."""

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

MANIFEST = f"""<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="{PACKAGE}"
    android:versionCode="7" android:versionName="1.2.3">
    <uses-sdk android:minSdkVersion="24" android:targetSdkVersion="33"/>
    <permission android:name="{PACKAGE}.permission.SYNC" android:protectionLevel="signature"/>
    <uses-permission android:name="android.permission.INTERNET"/>
    <application android:label="@string/app_name">
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
        <receiver android:name=".BootReceiver">
            <intent-filter>
                <action android:name="android.intent.action.BOOT_COMPLETED"/>
            </intent-filter>
        </receiver>
    </application>
</manifest>
"""

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

SMALI = {"Greeter": GREETER, "MainActivity": MAIN_ACTIVITY, "SyncService": SYNC_SERVICE, "BootReceiver": BOOT_RECEIVER}
NATIVE_C = 'const char *rea_native_token(void) { return "native-token"; }\n'


def _run(argv: list[str], cwd: Path) -> None:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(argv[0]).name} failed: {proc.stderr.strip()[-2000:]}")


def build_apk(out: Path) -> Path:
    """Assemble the sources with apktool, sign with a session debug key (v1, v2, v3); return the APK."""
    tools = toolchains.require_all(("apktool", "apksigner", "keytool", "aarch64-linux-gnu-gcc"))
    app = out / "app"
    (app / "smali" / "com" / "example" / "rea").mkdir(parents=True)
    (app / "res" / "values").mkdir(parents=True)
    (app / "lib" / "arm64-v8a").mkdir(parents=True)
    (app / "AndroidManifest.xml").write_text(MANIFEST)
    (app / "apktool.yml").write_text(APKTOOL_YML)
    (app / "res" / "values" / "strings.xml").write_text(STRINGS_XML)
    for name, source in SMALI.items():
        (app / "smali" / "com" / "example" / "rea" / f"{name}.smali").write_text(source)
    (out / "native.c").write_text(NATIVE_C)
    _run(
        [
            tools["aarch64-linux-gnu-gcc"],
            "-shared",
            "-fPIC",
            "-O1",
            "-o",
            str(app / "lib" / "arm64-v8a" / f"lib{LIBRARY}.so"),
            str(out / "native.c"),
        ],
        out,
    )
    # apktool keeps its framework under HOME; a private one keeps the session's HOME clean.
    _run(
        [tools["apktool"], "b", "--frame-path", str(out / "framework"), "-o", str(out / "unsigned.apk"), str(app)], out
    )
    _run(
        [
            tools["keytool"],
            "-genkeypair",
            "-keystore",
            str(out / "debug.p12"),
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
            "CN=rea test,O=rea",
            "-storepass",
            KEY_PASSWORD,
            "-keypass",
            KEY_PASSWORD,
        ],
        out,
    )
    apk = out / "fixture.apk"
    _run(
        [
            tools["apksigner"],
            "sign",
            "--ks",
            str(out / "debug.p12"),
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
            str(out / "unsigned.apk"),
        ],
        out,
    )
    return apk


def certificate_sha256(out: Path) -> str:
    """The debug key's certificate fingerprint, as keytool prints it (lowercase, no colons)."""
    tools = toolchains.require_all(("keytool",))
    proc = subprocess.run(
        [
            tools["keytool"],
            "-list",
            "-v",
            "-keystore",
            str(out / "debug.p12"),
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

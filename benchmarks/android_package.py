"""inspect_android_package + search_android_classes against androguard's own AnalyzeAPK of the same APK
(issue 29: goal at most 1.5x), each side in a fresh process so its peak RSS is its own.

The APK holds CLASSES generated classes (eight methods and a string each), assembled with apktool from smali
written here; pass an APK to measure that instead: ``python benchmarks/android_package.py [APK]``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from child_runs import run
from child_runs import time_ratio

CLASSES = 4000
ROOT = Path(__file__).resolve().parents[1]

ANDROGUARD = """
import json, resource, sys, time
from loguru import logger
logger.remove()
from androguard.misc import AnalyzeAPK
started = time.monotonic()
apk, dexes, analysis = AnalyzeAPK(sys.argv[1])
print(json.dumps({"seconds": round(time.monotonic() - started, 2), "classes": len(list(analysis.get_classes())),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""

REA = """
import json, resource, sys, time
from rea.registry import default_registry
from rea.session import Session
from rea.testing import result_of
session = Session(default_registry())
started = time.monotonic()
package = result_of(session, "inspect_android_package", {"path": sys.argv[1]})
hits = result_of(session, "search_android_classes", {"path": sys.argv[1], "pattern": "Gen1", "limit": 100})
took = time.monotonic() - started
session.close()
print(json.dumps({"seconds": round(took, 2), "dex_files": len(package["dex"]), "hits": hits["page"]["total"],
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def smali(index: int) -> str:
    methods = "\n".join(
        f""".method public m{m}(I)I
    .registers 3
    const-string v0, "gen {index} method {m}"
    add-int/lit8 v1, p1, {m}
    return v1
.end method
"""
        for m in range(8)
    )
    return f""".class public Lcom/example/gen/Gen{index};
.super Ljava/lang/Object;

.method public constructor <init>()V
    .registers 1
    invoke-direct {{p0}}, Ljava/lang/Object;-><init>()V
    return-void
.end method

{methods}"""


def build(out: Path) -> Path:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "android")]
    import androidfixtures as fx  # the fixture's manifest and apktool settings

    apktool = shutil.which("apktool")
    if apktool is None:
        raise SystemExit("apktool is not installed (apt-get install apktool)")
    app = out / "app"
    package = app / "smali" / "com" / "example" / "gen"
    package.mkdir(parents=True)
    (app / "res" / "values").mkdir(parents=True)
    (app / "smali" / "com" / "example" / "rea").mkdir(parents=True)
    (app / "AndroidManifest.xml").write_text(fx.MANIFEST)
    (app / "apktool.yml").write_text(fx.APKTOOL_YML)
    (app / "res" / "values" / "strings.xml").write_text(fx.STRINGS_XML)
    for name, source in fx.SMALI.items():
        (app / "smali" / "com" / "example" / "rea" / f"{name}.smali").write_text(source)
    for i in range(CLASSES):
        (package / f"Gen{i}.smali").write_text(smali(i))
    apk = out / "generated.apk"
    subprocess.run(
        [apktool, "b", "--frame-path", str(out / "framework"), "-o", str(apk), str(app)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    return apk


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="rea-bench-android-") as tmp:
        apk = Path(sys.argv[1]) if len(sys.argv) > 1 else build(Path(tmp))
        ours, theirs = run(REA, apk), run(ANDROGUARD, apk)
        ratio = time_ratio(ours, theirs)
        print(json.dumps({"apk_bytes": apk.stat().st_size, "rea": ours, "androguard": theirs, "time_ratio": ratio}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

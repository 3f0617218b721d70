"""C# and C sources of the managed fixtures, and their builds with mcs and gcc."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

NATIVE_C = r"""
int native_add(int a, int b) { return a + b; }
int native_mul(int a, int b) { return a * b; }
"""

LIB_V1 = r"""
using System;
using System.Reflection;
using System.Runtime.InteropServices;
[assembly: AssemblyVersion("1.2.3.4")]
[assembly: AssemblyTitle("Demo Library")]
namespace System.Runtime.InteropServices {
    // Mono's mscorlib predates .NET 7: the attribute the LibraryImport source generator reads, declared here.
    [AttributeUsage(AttributeTargets.Method)]
    public sealed class LibraryImportAttribute : Attribute {
        public LibraryImportAttribute(string libraryName) { LibraryName = libraryName; }
        public string LibraryName;
        public string EntryPoint;
        public bool SetLastError;
    }
}
namespace Demo.Lib {
    public interface IShape { double Area(); }
    public enum Level : byte { Low = 1, High = 2 }
    // AttributeTargets is mscorlib's (an enum defined elsewhere), Level this assembly's.
    [AttributeUsage(AttributeTargets.Class | AttributeTargets.Method)]
    public sealed class TagAttribute : Attribute {
        public TagAttribute(Level level) { }
        public Level Other;
    }
    [Tag(Level.High, Other = Level.Low)]
    public class Calculator : IShape {
        public const int Limit = /*LIMIT*/10;
        public int Total;
        public double Area() { return 0.0; }
        /*INSERT*/
        public int Add(int a, int b) { Total = a + b; return Total; }
        public static int Twice(int x) { return /*TWICE*/x * 2; }
        public int Combined(int a) { return Add(a, a) + Twice(a); }
        public int Clamp(int v) { return v > Limit ? Limit : v; }
        public string Greet(string name) { return "hi " + name; }
        public void Reset() {
            if (Total > Limit) throw new InvalidOperationException("total over the limit");
            Total = 0;
        }
        public class Inner { public static long Big(long v) { return v << 3; } }
    }
    public static class Endpoints {
        public static string Api(string route) { return "https://api.example.invalid/v1/" + route; }
        public static string Status() { return Api("status"); }
        public static string Login() { return Api("login?user=demo"); }
    }
    public class Box<T> {
        public T Value;
        public T Get() { return Value; }
        public Box<T> With(T v) { Value = v; return this; }
        public static U Map<U>(Func<T, U> f, T v) { return f(v); }
    }
    public delegate int BinOp(int a, int b);
    public static class Native {
        [DllImport("libnative.so", EntryPoint = "native_add", CharSet = CharSet.Ansi, SetLastError = true)]
        public static extern int NativeAdd(int a, int b);
        [DllImport("native", CallingConvention = CallingConvention.Cdecl)]
        public static extern int native_mul(int a, int b);
        [DllImport("libmissing.so")]
        public static extern void Missing();
        [DllImport("libnative.so", EntryPoint = "native_sub")]
        public static extern int NativeSub(int a, int b);
        [LibraryImport("libnative.so", EntryPoint = "native_mul", SetLastError = true)]
        public static int Multiply(int a, int b) { return 0; }
        public static int ViaPointer(IntPtr p) {
            BinOp op = (BinOp)Marshal.GetDelegateForFunctionPointer(p, typeof(BinOp));
            return op(1, 2);
        }
    }
}
"""
# v2 inserts a method before Add (moving the tokens Combined calls), changes the body of Twice and the constant Limit
# (which the compiler copies into Clamp and Reset: their IL changes with it).
LIB_V2 = (
    LIB_V1.replace("/*INSERT*/", "public int Sub(int a, int b) { return a - b; }")
    .replace("/*TWICE*/x * 2", "x + x")
    .replace("/*LIMIT*/10", "20")
)

APP = r"""
using System;
using Demo.Lib;
namespace Demo.App {
    public static class Program {
        public static int Main(string[] args) {
            var c = new Calculator();
            int r = c.Add(2, 3) + Calculator.Twice(4);
            var b = new Box<int>().With(r);
            Console.WriteLine("result {0}", b.Get());
            return Native.NativeAdd(r, 1);
        }
    }
}
"""
RESOURCE = b"rea managed fixture resource\n"


def compile_cs(mcs: str, folder: Path, name: str, source: str, *extra: str) -> Path:
    src = folder / (name + ".cs")
    src.write_text(source)
    target = "exe" if name.endswith(".exe") or (extra and extra[0] == "exe") else "library"
    out = folder / name
    args = [a for a in extra if a != "exe"]
    subprocess.run(
        [mcs, f"-target:{target}", f"-out:{out}", *args, str(src)], check=True, capture_output=True, cwd=folder
    )
    return out


def build_all(mcs: str, gcc: str, root: Path) -> dict[str, Path]:
    """Lib v1 and v2, App.exe against v1, libnative.so, and an application folder holding all three."""
    (root / "data.txt").write_bytes(RESOURCE)
    v1 = root / "v1"
    v2 = root / "v2"
    app = root / "app"
    for d in (v1, v2, app):
        d.mkdir()
    lib1 = compile_cs(mcs, v1, "Lib.dll", LIB_V1, f"-resource:{root / 'data.txt'},Demo.data.txt")
    lib2 = compile_cs(mcs, v2, "Lib.dll", LIB_V2, f"-resource:{root / 'data.txt'},Demo.data.txt")
    exe = compile_cs(mcs, v1, "App.exe", APP, f"-r:{lib1}")
    native_src = root / "native.c"
    native_src.write_text(NATIVE_C)
    native = root / "libnative.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(native), str(native_src)], check=True, capture_output=True)
    for f in (lib1, exe, native):
        shutil.copy(f, app / f.name)
    return {"lib_v1": lib1, "lib_v2": lib2, "app_exe": exe, "native": native, "app": app}

"""A Go program built by the test with Debian's Go, offline: one dependency served from a module proxy folder the
test writes (so the build list records its version and go.sum hash), one through a replace directive."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

GREET_VERSION = "v1.2.3"
MAIN = """package main

import (
	"fmt"
	"os"

	"example.com/greet"
	"example.com/local"
)

//go:noinline
func computeAnswer(n int) int { return local.Twice(n) + 2 }

func main() {
	fmt.Println(greet.Hello("rea"), computeAnswer(20), len(os.Args))
}
"""
GO_MOD = f"""module example.com/app

go 1.19

require (
	example.com/greet {GREET_VERSION}
	example.com/local v0.1.0
)

replace example.com/local => ../local
"""


def _module(root: Path, name: str, files: dict[str, str]) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "go.mod").write_text(f"module example.com/{name}\n\ngo 1.19\n")
    for file, text in files.items():
        (folder / file).write_text(text)
    return folder


def _proxy(root: Path, greet: Path) -> Path:
    """A GOPROXY=file:// folder serving example.com/greet at GREET_VERSION (the layout `go help goproxy` gives)."""
    base = root / "proxy" / "example.com" / "greet" / "@v"
    base.mkdir(parents=True)
    (base / "list").write_text(GREET_VERSION + "\n")
    (base / f"{GREET_VERSION}.info").write_text(json.dumps({"Version": GREET_VERSION, "Time": "2024-01-01T00:00:00Z"}))
    (base / f"{GREET_VERSION}.mod").write_text((greet / "go.mod").read_text())
    with zipfile.ZipFile(base / f"{GREET_VERSION}.zip", "w") as z:
        for file in ("go.mod", "greet.go"):
            z.write(greet / file, f"example.com/greet@{GREET_VERSION}/{file}")
    return root / "proxy"


def build(go: str, out: Path) -> dict[str, Path]:
    """The program as a Linux ELF (with symbols and stripped), a stripped Windows PE and a macOS Mach-O; its
    ``go.sum`` too."""
    hello = 'package greet\n\nfunc Hello(name string) string { return "hello, " + name }\n'
    greet = _module(out, "greet", {"greet.go": hello})
    _module(out, "local", {"local.go": "package local\n\nfunc Twice(n int) int { return n * 2 }\n"})
    app = out / "app"
    app.mkdir()
    (app / "go.mod").write_text(GO_MOD)
    (app / "main.go").write_text(MAIN)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(out / "home"),
        "GOPATH": str(out / "gopath"),
        "GOCACHE": str(out / "cache"),
        "GOPROXY": f"file://{_proxy(out, greet)}",
        "GOSUMDB": "off",
        "GOFLAGS": "-mod=mod",
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
    }
    builds = {
        "elf": ({}, []),
        "stripped": ({}, ["-ldflags=-s -w"]),
        "pe": ({"GOOS": "windows"}, ["-ldflags=-s -w"]),  # stripped: its pclntab is found by magic in .rdata
        "macho": ({"GOOS": "darwin"}, []),
    }
    built: dict[str, Path] = {}
    for name, (extra, flags) in builds.items():
        target = out / f"app-{name}"
        subprocess.run(
            [go, "build", *flags, "-o", str(target), "."],
            cwd=app,
            env={**env, **extra},
            check=True,
            capture_output=True,
            timeout=600,
        )
        built[name] = target
    built["go.sum"] = app / "go.sum"
    return built

"""Annotation store and notebook figures: write latency, read cost, and what annotations add to a read tool.

Run: python benchmarks/annotations.py [BINARY]  (default /bin/ls, native provider). Everything is written
to a temporary store; the real one is never touched.
"""

from __future__ import annotations

import sys
import tempfile

from timing import median_ms

from rea.annotations import AnnotationStore
from rea.registry import load
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of

SHA = "ab" * 32


def store_figures(root: str) -> None:
    store = AnnotationStore(root)
    counter = iter(range(10**9))
    write = median_ms(lambda: store.set_fields(SHA, {hex(0x1000 + next(counter)): {"name": "f"}}), 200)
    print(f"store write (flock, fsync, rename), 1..200 addresses     median {write:7.2f} ms")
    for i in range(0, 10_000, 1000):
        store.set_fields(SHA, {hex(0x100000 + j): {"name": f"n{j}", "comment": "c" * 40} for j in range(i, i + 1000)})
    cached = median_ms(lambda: store.load(SHA), 200)
    cold = median_ms(lambda: AnnotationStore(root).load(SHA), 10)
    big = median_ms(lambda: store.set_fields(SHA, {"0x10": {"comment": "x"}}), 20)
    print(f"read of a 10,200-address document: cached               median {cached:7.3f} ms")
    print(f"read of a 10,200-address document: decode and validate  median {cold:7.2f} ms")
    print(f"write into a 10,200-address document                    median {big:7.2f} ms")


def tool_figures(binary: str, root: str) -> None:
    session = Session(load(), annotations=AnnotationStore(root))
    result_of(session, "open_binary", {"path": binary, "provider_id": "native"})
    page = result_of(session, "list_procedures", {"limit": 1000})["procedures"]
    plain = median_ms(lambda: call_tool(session, "list_procedures", {"limit": 1000}), 20)
    names = {p["address"]: f"user_{i}" for i, p in enumerate(page) if p["kind"] == "local"}
    result_of(session, "set_addresses_names", {"names": dict(list(names.items())[:1000])})
    renamed = median_ms(lambda: call_tool(session, "list_procedures", {"limit": 1000}), 20)
    print(f"list_procedures, {len(page)} items, no annotations            median {plain:7.2f} ms")
    print(f"list_procedures, {len(page)} items, {len(names)} user names           median {renamed:7.2f} ms")
    first = next(iter(names.values()))
    info = median_ms(lambda: call_tool(session, "procedure_info", {"procedure": first}), 50)
    print(f"procedure_info by a user name                           median {info:7.2f} ms")
    session.close()


def main() -> None:
    binary = sys.argv[1] if len(sys.argv) > 1 else "/bin/ls"
    with tempfile.TemporaryDirectory(prefix="rea-annotations-bench-") as root:
        store_figures(root + "/store")
        tool_figures(binary, root + "/tools")


if __name__ == "__main__":
    main()

"""Ghidra's startup inside the worker: the JVM through pyghidra, a private temporary project, import, analysis.

Runs only in the worker process (``python -m rea_plugins.ghidra.worker``). The project lives in the worker's
private directory (its TMPDIR), is created temporary (Ghidra deletes it when closed) and is never saved, so
nothing is written beside the target; rea removes the private directory when the worker ends.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

# The start request arrives over the worker protocol as JSON (path, name, sha256, install_dir, max_heap_mb, ...).
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import Reporter
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea_plugins.ghidra.extract import GhidraSource

DOCTOR = "Run `rea doctor`: it checks GHIDRA_INSTALL_DIR, the JDK and pyghidra."


class Engine:
    """The started JVM, the temporary project and the one analysed program of this worker."""

    def __init__(self) -> None:
        self.project: Any = None
        self.program: Any = None
        self.consumer: Any = None
        self.source: GhidraSource | None = None

    def start(self, params: JSONObject, reporter: Reporter) -> GhidraSource:
        self._start_jvm(params, reporter)
        self._import(params, reporter)
        reporter.progress("running Ghidra's default auto-analysis")
        self._analyze()
        reporter.progress("reading the analysed program")
        source = GhidraSource(self.program, arg_str(params, "name", ""), arg_str(params, "sha256", ""))
        source.inventory()
        self.source = source
        return source

    def _start_jvm(self, params: JSONObject, reporter: Reporter) -> None:
        try:
            import pyghidra
        except ImportError:
            raise ReaError(
                "provider_unavailable",
                "pyghidra is not installed in rea's environment",
                remediation="pip install 'rea-reverse[ghidra]'; " + DOCTOR,
                details={"reason": "runtime_missing", "phase": "startup"},
            ) from None
        reporter.progress("starting the JVM and Ghidra")
        home = os.environ.get("HOME", tempfile.gettempdir())
        try:
            launcher = pyghidra.HeadlessPyGhidraLauncher(install_dir=Path(arg_str(params, "install_dir", "")))
            # The JVM keeps its settings, caches and temporary files in the worker's private directory.
            launcher.add_vmargs(
                f"-Xmx{arg_int(params, 'max_heap_mb', 2048)}m",
                f"-Duser.home={home}",
                f"-Djava.io.tmpdir={tempfile.gettempdir()}",
                "-Djava.awt.headless=true",
            )
            launcher.start()
        except Exception:
            traceback.print_exc(file=sys.stderr)
            raise ReaError(
                "provider_unavailable",
                "the JVM or Ghidra did not start in the worker",
                remediation=DOCTOR + " The worker's stderr has the launcher's message.",
                details={"reason": "jvm_start_failed", "phase": "startup"},
            ) from None

    def _import(self, params: JSONObject, reporter: Reporter) -> None:
        from ghidra.app.util.importer import ProgramLoader  # type: ignore[import-not-found]
        from ghidra.base.project import GhidraProject  # type: ignore[import-not-found]
        from ghidra.util.task import TaskMonitor  # type: ignore[import-not-found]
        from java.io import File  # type: ignore[import-not-found]
        from java.lang import Object  # type: ignore[import-not-found]

        name = arg_str(params, "name", "")
        reporter.progress("creating a private temporary project")
        folder = tempfile.mkdtemp(prefix="ghidra-project-")
        # temporary=True: Ghidra deletes the project when it is closed; it is never saved.
        self.project = GhidraProject.createProject(folder, "rea", True)
        reporter.progress(f"importing {name}")
        try:
            results = (
                ProgramLoader.builder()
                .source(File(arg_str(params, "path", "")))
                .project(self.project.getProject())
                .monitor(TaskMonitor.DUMMY)
                .load()
            )
        except Exception:
            traceback.print_exc(file=sys.stderr)
            raise ReaError(
                "unsupported_target",
                f"Ghidra could not import {name}",
                remediation="Check that the file is an intact binary in a format Ghidra loads; another "
                "provider can be chosen with open_binary.",
                details={"reason": "import_failed", "phase": "startup"},
            ) from None
        try:
            self.consumer = Object()
            self.program = results.getPrimaryDomainObject(self.consumer)
        finally:
            results.close()

    def _analyze(self) -> None:
        import pyghidra

        pyghidra.analyze(self.program)

    def close(self) -> None:
        """Release the program and close (and so delete) the temporary project."""
        if self.source is not None:
            self.source.close()
        if self.program is not None and self.consumer is not None:
            self.program.release(self.consumer)
        if self.project is not None:
            self.project.close()
        self.source = self.program = self.project = None

"""The Node program the V8 inspector tests observe, and Node processes under --inspect on loopback that the tests
start and end themselves."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

MAIN = """\
const path = require('path');
const fs = require('fs');
const util = require('./lib/util.js');
const feature = require('./dist/feature.js');
const pluginDir = path.join(__dirname, 'plugins');
for (const name of fs.readdirSync(pluginDir).sort()) require(path.join(pluginDir, name));
console.log('ready', util.add(2, 3), feature.run('x'));
process.on('uncaughtException', () => {});
setTimeout(() => { throw new Error('rea-test-uncaught'); }, 20);
let ticks = 0;
// A debugger statement on every tick: an observer that did not skip pauses would stop the program here.
setInterval(() => { debugger; ticks += 1; console.log('tick', ticks); }, 100);
"""
UTIL = "exports.add = (a, b) => a + b;\n"
UNUSED = "exports.never = () => 'never loaded';\n"
PLUGIN = "module.exports = { name: 'early' };\n"
LATE_PLUGIN = "module.exports = { name: 'late' };\n"
FEATURE = """\
import { helper } from './helper.js';
export function run(x) {
  return helper(x) + '!';
}
"""
HELPER = "export function helper(x) {\n  return `<${x}>`;\n}\n"
PACKAGE = '{"name": "rea-runtime-fixture", "version": "1.0.0", "main": "main.js"}\n'


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


CRASHING = """\
require('./lib/util.js');
setTimeout(() => { throw new Error('rea-test-uncaught'); }, 2500);
setInterval(() => {}, 1000);
"""


class Inspected:
    """A Node process the test started under --inspect on loopback, with its inspector endpoint."""

    def __init__(self, node: str, script: Path) -> None:
        self.proc = subprocess.Popen(
            [node, "--inspect=127.0.0.1:0", script.name],
            cwd=script.parent,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline().decode("utf-8", "replace")
        found = re.search(r"ws://127\.0\.0\.1:(\d+)/", line)
        if found is None:
            self.close()
            pytest.fail(f"node --inspect did not announce its inspector: {line!r}")
        self.endpoint = f"http://127.0.0.1:{found.group(1)}"

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

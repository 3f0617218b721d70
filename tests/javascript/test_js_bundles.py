"""Bundle shapes besides the esbuild fixture: webpack module maps and esbuild wrappers without comments.

webpack itself is not installed for the tests (it is large); these files follow webpack 5's documented
output (development and minified production) and are written here by hand, so the expected module
paths and edges are read off the text below.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from jssupport import analyze
from jssupport import graph
from jssupport import modules_by_id

from rea.session import Session

WEBPACK_DEV = r"""/******/ (() => { // webpackBootstrap
/******/ 	var __webpack_modules__ = ({

/***/ "./src/a.js":
/*!******************!*\
  !*** ./src/a.js ***!
  \******************/
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {

"use strict";
__webpack_require__.r(__webpack_exports__);
/* harmony export */ __webpack_require__.d(__webpack_exports__, {
/* harmony export */   "greet": () => (/* binding */ greet)
/* harmony export */ });
/* harmony import */ var _b_js__WEBPACK_IMPORTED_MODULE_0__ = __webpack_require__(/*! ./b.js */ "./src/b.js");
function greet() { return 'hello ' + (0,_b_js__WEBPACK_IMPORTED_MODULE_0__.name)(); }

/***/ }),

/***/ "./src/b.js":
/***/ ((module) => {

module.exports = { name: () => 'webpack-b' };

/***/ })

/******/ 	});
/******/ 	var __webpack_module_cache__ = {};
/******/ 	function __webpack_require__(moduleId) {
/******/ 		var cachedModule = __webpack_module_cache__[moduleId];
/******/ 		if (cachedModule !== undefined) { return cachedModule.exports; }
/******/ 		var module = __webpack_module_cache__[moduleId] = { exports: {} };
/******/ 		__webpack_modules__[moduleId](module, module.exports, __webpack_require__);
/******/ 		return module.exports;
/******/ 	}
/******/ 	var __webpack_exports__ = __webpack_require__("./src/a.js");
/******/ })()
;
"""

# A minified webpack 5 chunk file: numeric module ids, the require function renamed to `n`.
WEBPACK_MIN = (
    '"use strict";(self.webpackChunkapp=self.webpackChunkapp||[]).push([[179],{'
    '12:(e,t,n)=>{const r=n(34);e.exports={run:()=>r.x+"-min"}},'
    '34:e=>{e.exports={x:"webpack-min-x"}}}]);\n'
)

WRAPPERS = """var __getOwnPropNames = Object.getOwnPropertyNames;
var __commonJS = (cb, mod) => function __require() {
  return mod || (0, cb[__getOwnPropNames(cb)[0]])((mod = { exports: {} }).exports, mod), mod.exports;
};
var require_dep = __commonJS({
  "lib/dep.js"(exports, module) {
    module.exports = { dep: 'wrapped-dep' };
  }
});
var require_entry = __commonJS({
  "lib/entry.js"(exports, module) {
    var dep = require_dep();
    exports.entry = function entry() { return dep.dep; };
  }
});
module.exports = require_entry();
"""


def test_webpack_development_module_map(analysis_session: Session, tmp_path: Path) -> None:
    (tmp_path / "bundle.js").write_text(WEBPACK_DEV)
    mods = modules_by_id(analyze(analysis_session, tmp_path))
    bundle = mods["mod:bundle.js"]
    assert bundle["kind"] == "asset" and bundle["bundle_format"] == "webpack"
    assert sorted(bundle["bundled_modules"]) == ["mod:bundle.js!./src/a.js", "mod:bundle.js!./src/b.js"]
    a = mods["mod:bundle.js!./src/a.js"]
    assert {(e["kind"], e["resolved"]) for e in a["imports"]} == {("webpack-require", "mod:bundle.js!./src/b.js")}
    assert "greet" in {f["name"] for f in a["functions"]}
    b = mods["mod:bundle.js!./src/b.js"]
    assert {e["name"] for e in b["exports"]} == {"module.exports", "name"}
    assert "webpack-b" in {s["value"] for s in b["strings"]["items"]}


def test_webpack_minified_numeric_ids(analysis_session: Session, tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text(WEBPACK_MIN)
    mods = modules_by_id(analyze(analysis_session, tmp_path))
    assert sorted(mods["mod:min.js"]["bundled_modules"]) == ["mod:min.js!12", "mod:min.js!34"]
    first = mods["mod:min.js!12"]
    assert [(e["kind"], e["specifier"], e["resolved"]) for e in first["imports"]] == [
        ("webpack-require", "34", "mod:min.js!34")
    ]
    assert {e["name"] for e in mods["mod:min.js!34"]["exports"]} == {"module.exports", "x"}


def test_esbuild_wrappers_without_path_comments(analysis_session: Session, tmp_path: Path) -> None:
    (tmp_path / "out.js").write_text(WRAPPERS)
    mods = modules_by_id(analyze(analysis_session, tmp_path))
    assert mods["mod:out.js"]["bundle_format"] == "wrapper"
    entry = mods["mod:out.js!lib/entry.js"]
    assert [(e["kind"], e["resolved"]) for e in entry["imports"]] == [("bundle-require", "mod:out.js!lib/dep.js")]
    assert {e["name"] for e in entry["exports"]} == {"entry"}
    dep = mods["mod:out.js!lib/dep.js"]
    assert {e["name"] for e in dep["exports"]} == {"module.exports", "dep"}
    assert "wrapped-dep" in {s["value"] for s in dep["strings"]["items"]}


def test_source_map_forms(analysis_session: Session, tmp_path: Path) -> None:
    sections = {
        "version": 3,
        "sections": [
            {
                "offset": {"line": 0, "column": 0},
                "map": {
                    "version": 3,
                    "sources": ["webpack://app/./src/one.js"],
                    "sourcesContent": ["one()"],
                    "mappings": "",
                },
            },
            {
                "offset": {"line": 1, "column": 0},
                "map": {"version": 3, "sourceRoot": "../lib/", "sources": ["two.js"], "mappings": ""},
            },
        ],
    }
    encoded = base64.b64encode(json.dumps(sections).encode()).decode()
    (tmp_path / "out").mkdir()
    url = f"data:application/json;base64,{encoded}"
    (tmp_path / "out" / "idx.js").write_text(f"one();two();\n//# sourceMappingURL={url}\n")
    orphan_map = {"version": 3, "sources": ["/abs/x.js"], "mappings": ""}
    (tmp_path / "out" / "orphan.js.map").write_text(json.dumps(orphan_map))
    (tmp_path / "out" / "gone.js").write_text("x();\n//# sourceMappingURL=gone.js.map\n")
    result = graph(analyze(analysis_session, tmp_path))
    maps = {m["node_id"]: m for m in result["source_maps"]}
    inline = maps["map:out/idx.js#inline"]
    assert [(s["source"], s["path"], s["has_content"]) for s in inline["sources"]] == [
        ("webpack://app/./src/one.js", "src/one.js", True),
        ("two.js", "lib/two.js", False),
    ]
    orphan = maps["map:out/orphan.js.map"]
    assert orphan["location"] == "unreferenced" and orphan["generated"] is None
    assert orphan["sources"][0]["outside_root"] is True and orphan["sources"][0]["path"] == "abs/x.js"
    gone = maps["map:out/gone.js.map"]
    assert gone["sources"] == [] and gone["diagnostics"][0]["kind"] == "unavailable"

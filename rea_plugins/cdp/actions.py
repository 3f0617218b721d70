"""Scenario actions over CDP: locate an element (CSS, test id, ARIA role and name), then act as input would.

Elements are found through the DOM and Accessibility domains (page scripts cannot intercept that), clicks
and keys are dispatched as trusted input events, and typing inserts text the way an IME commit does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea_plugins.cdp import connection as cdp

POLL_S = 0.1

_SELECT_ALL = """function () {
  if (this.isContentEditable) {
    const range = document.createRange(); range.selectNodeContents(this);
    const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range); return true;
  }
  if (typeof this.select === "function" && !this.disabled && !this.readOnly) { this.select(); return true; }
  return false;
}"""
_SET_OPTION = """function (value) {
  if (this.tagName !== "SELECT") return false;
  const match = Array.from(this.options).find((o) => o.value === value || o.label === value);
  if (!match) return false;
  this.value = match.value;
  this.dispatchEvent(new Event("input", {bubbles: true}));
  this.dispatchEvent(new Event("change", {bubbles: true}));
  return true;
}"""
_CHECKED = "function () { return !!this.checked; }"

# key -> (code, windowsVirtualKeyCode, text)
_KEYS: dict[str, tuple[str, int, str]] = {
    "Enter": ("Enter", 13, "\r"),
    "Tab": ("Tab", 9, ""),
    "Escape": ("Escape", 27, ""),
    "Backspace": ("Backspace", 8, ""),
    "Delete": ("Delete", 46, ""),
    " ": ("Space", 32, " "),
    "ArrowUp": ("ArrowUp", 38, ""),
    "ArrowDown": ("ArrowDown", 40, ""),
    "ArrowLeft": ("ArrowLeft", 37, ""),
    "ArrowRight": ("ArrowRight", 39, ""),
    "Home": ("Home", 36, ""),
    "End": ("End", 35, ""),
    "PageUp": ("PageUp", 33, ""),
    "PageDown": ("PageDown", 34, ""),
}


class StepFailed(ReaError):
    """The action could not be carried out on this page (the scenario records it and stops)."""

    def __init__(self, message: str) -> None:
        super().__init__("execution_failure", message)


def describe(locator: JSONObject) -> str:
    """A locator of the caller's request (its document, as the input schema shapes it), in words."""
    if locator["kind"] == "css":
        return f"css {locator['selector']!r}"
    if locator["kind"] == "test_id":
        return f"test id {locator['value']!r}"
    return f"{locator['role']} named {locator['name']!r}"


class Page:
    """One attached page session and the actions a scenario may take on it."""

    def __init__(self, conn: cdp.Connection, session: str, ctx: CallContext) -> None:
        self.conn = conn
        self.session = session
        self.ctx = ctx

    def call(self, method: str, params: JSONObject | None = None, timeout_s: float = 30.0) -> dict[str, Any]:
        """A DevTools command on the page: its params and its reply are protocol JSON (the reply as the kernel's
        connection answers it, read by the actions key by key)."""
        return self.conn.call(method, params, session=self.session, ctx=self.ctx, timeout_s=timeout_s)

    # -- finding ---------------------------------------------------------------------------------

    def find(self, locator: JSONObject) -> int | None:
        """The backend node id of the first match of a locator of the caller's request (its JSON), or None."""
        root = self.call("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        if locator["kind"] == "role":
            try:
                nodes = self.call(
                    "Accessibility.queryAXTree",
                    {"nodeId": root, "accessibleName": locator["name"], "role": locator["role"]},
                ).get("nodes", [])
            except cdp.CommandFailed as exc:
                raise StepFailed(f"cannot query the accessibility tree: {exc.details['cdp_message']}") from None
            for node in nodes:
                if not node.get("ignored") and isinstance(node.get("backendDOMNodeId"), int):
                    return int(node["backendDOMNodeId"])
            return None
        if locator["kind"] == "css":
            selector = locator["selector"]
        else:
            escaped = str(locator["value"]).replace("\\", "\\\\").replace('"', '\\"')
            selector = f'[data-testid="{escaped}"]'
        try:
            node_id = self.call("DOM.querySelector", {"nodeId": root, "selector": selector}).get("nodeId", 0)
            if not node_id:
                return None
            return int(self.call("DOM.describeNode", {"nodeId": node_id})["node"]["backendNodeId"])
        except cdp.CommandFailed as exc:
            message = str(exc.details.get("cdp_message", ""))
            if "querying" in message:  # Chromium's "DOM Error while querying": the selector does not parse
                raise StepFailed(f"invalid selector {selector!r}: {message}") from None
            # Any other failure means the document was replaced between the calls (a page still loading
            # invalidates every node id it handed out): not found yet, and the caller polls again.
            return None

    def visible(self, backend: int) -> bool:
        try:
            model = self.call("DOM.getBoxModel", {"backendNodeId": backend})["model"]
        except cdp.CommandFailed:
            return False  # not rendered: display:none, hidden, detached
        return bool(model.get("width", 0) > 0 and model.get("height", 0) > 0)

    def require(self, locator: JSONObject, deadline: float, visible: bool = True) -> int:
        """Wait (up to ``deadline``) for the element, visible when acting on it needs that."""
        while True:
            backend = self.find(locator)
            if backend is not None and (not visible or self.visible(backend)):
                return backend
            if time.monotonic() >= deadline:
                state = "not found" if backend is None else "not visible"
                raise StepFailed(f"{describe(locator)}: {state} before the step's deadline")
            cdp.wait(self.ctx, POLL_S, "locating an element")

    def function_on(self, backend: int, declaration: str, *args: Any) -> Any:
        obj = self.call("DOM.resolveNode", {"backendNodeId": backend})["object"]["objectId"]
        reply = self.call(
            "Runtime.callFunctionOn",
            {
                "objectId": obj,
                "functionDeclaration": declaration,
                "arguments": [{"value": a} for a in args],
                "returnByValue": True,
            },
        )
        if "exceptionDetails" in reply:
            raise StepFailed("the element rejected the operation")
        return (reply.get("result") or {}).get("value")

    # -- acting ----------------------------------------------------------------------------------

    def click(self, backend: int, button: str = "left", count: int = 1) -> None:
        self.call("DOM.scrollIntoViewIfNeeded", {"backendNodeId": backend})
        quads = self.call("DOM.getContentQuads", {"backendNodeId": backend}).get("quads", [])
        quad = next((q for q in quads if len(q) == 8), None)
        if quad is None:
            raise StepFailed("the element has no clickable area")
        x, y = sum(quad[0::2]) / 4, sum(quad[1::2]) / 4
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for n in range(1, count + 1):
            base = {"x": x, "y": y, "button": button, "clickCount": n}
            self.call("Input.dispatchMouseEvent", {"type": "mousePressed", **base})
            self.call("Input.dispatchMouseEvent", {"type": "mouseReleased", **base})

    def fill(self, backend: int, text: str) -> None:
        self.call("DOM.focus", {"backendNodeId": backend})
        if not self.function_on(backend, _SELECT_ALL):
            raise StepFailed("the element is not editable")
        if text:
            self.call("Input.insertText", {"text": text})
        else:
            self.key("Delete")

    def key(self, key: str) -> None:
        code, vk, text = _KEYS.get(key, ("", 0, key if len(key) == 1 else ""))
        if not code and len(key) == 1:
            code = f"Key{key.upper()}" if key.isalpha() else ""
            vk = ord(key.upper())
        if not code and not text:
            raise StepFailed(f"unknown key {key!r}")
        down: JSONObject = {
            "type": "keyDown" if text else "rawKeyDown",
            "key": key,
            "code": code,
            "windowsVirtualKeyCode": vk,
        }
        if text:
            down["text"] = text
        self.call("Input.dispatchKeyEvent", down)
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk})

    def select(self, backend: int, value: str) -> None:
        if not self.function_on(backend, _SET_OPTION, value):
            raise StepFailed("no option with that value or label")

    def set_checked(self, backend: int, checked: bool) -> None:
        if bool(self.function_on(backend, _CHECKED)) != checked:
            self.click(backend)
        if bool(self.function_on(backend, _CHECKED)) != checked:
            raise StepFailed("clicking did not change the checked state")

    def wait_loaded(self, deadline: float) -> bool:
        """Wait (up to ``deadline``) until the document has loaded; False when it had not by then."""
        while True:
            try:
                reply = self.call("Runtime.evaluate", {"expression": "document.readyState", "returnByValue": True})
                if (reply.get("result") or {}).get("value") == "complete":
                    return True
            except cdp.CommandFailed:
                pass  # the context was replaced by the navigation still under way
            if time.monotonic() >= deadline:
                return False
            cdp.wait(self.ctx, POLL_S, "waiting for the page to load")

    def wait_state(self, locator: JSONObject, state: str, deadline: float) -> None:
        while True:
            backend = self.find(locator)
            shown = backend is not None and self.visible(backend)
            done = {
                "attached": backend is not None,
                "detached": backend is None,
                "visible": shown,
                "hidden": not shown,
            }[state]
            if done:
                return
            if time.monotonic() >= deadline:
                raise StepFailed(f"{describe(locator)} was not {state} before the step's deadline")
            cdp.wait(self.ctx, POLL_S, "waiting for an element")


def run_action(
    page: Page,
    # An action of the caller's request as its input schema shapes it, read key by key (see ScenarioRequest).
    action: JSONObject,
    value_of: Callable[[JSONObject], str],
    navigate: Callable[[JSONObject, float], None],
    deadline: float,
) -> None:
    """Carry out one declared action (``goto`` goes through ``navigate``, which waits for the page)."""
    kind = arg_str(action, "action", "")
    # Every action but goto and wait_for_timeout names an element, and fill and select_option a value.
    locator, value = arg_object(action, "locator") or {}, arg_object(action, "value") or {}
    if kind == "goto":
        navigate(action, deadline)
    elif kind == "wait_for_timeout":
        cdp.wait(page.ctx, arg_int(action, "duration_ms", 0) / 1000, "wait_for_timeout")
    elif kind == "wait_for":
        page.wait_state(locator, arg_str(action, "state", ""), deadline)
    elif kind == "click":
        page.click(
            page.require(locator, deadline), arg_str(action, "button", "left"), arg_int(action, "click_count", 1)
        )
    elif kind == "fill":
        page.fill(page.require(locator, deadline), value_of(value))
    elif kind == "press":
        page.call("DOM.focus", {"backendNodeId": page.require(locator, deadline)})
        page.key(arg_str(action, "key", ""))
    elif kind == "select_option":
        page.select(page.require(locator, deadline), value_of(value))
    elif kind in ("check", "uncheck"):
        page.set_checked(page.require(locator, deadline), kind == "check")
    else:  # the schema admits no other action
        raise StepFailed(f"unknown action {kind}")

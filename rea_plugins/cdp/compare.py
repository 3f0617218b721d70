"""Comparisons over supplied captures (local data only; no browser is contacted).

Passive captures compare by identity keys: scripts by URL and position (a changed digest is a changed
script), requests by method and URL, frames, resources, console messages, forms, storage keys and WebMCP
tools. Scenario captures align steps by exact ``step_id`` and compare each step's artifacts and events after
the caller's literal normalization rules. Missing or truncated evidence never proves equality.
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from collections.abc import Iterable
from typing import Any

import msgspec

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.cdp import png
from rea_plugins.cdp.model import Alignment
from rea_plugins.cdp.model import ArtifactDifference
from rea_plugins.cdp.model import Bounds
from rea_plugins.cdp.model import Channels
from rea_plugins.cdp.model import DomDiff
from rea_plugins.cdp.model import EventsDiff
from rea_plugins.cdp.model import ImageSide
from rea_plugins.cdp.model import Inspection
from rea_plugins.cdp.model import Normalization
from rea_plugins.cdp.model import PassiveComparison
from rea_plugins.cdp.model import ScenarioCapture
from rea_plugins.cdp.model import ScenarioComparison
from rea_plugins.cdp.model import ScenarioStep
from rea_plugins.cdp.model import ScreenshotComparison
from rea_plugins.cdp.model import ScriptBrief
from rea_plugins.cdp.model import ScriptChange
from rea_plugins.cdp.model import ScriptsDiff
from rea_plugins.cdp.model import SetDiff
from rea_plugins.cdp.model import StepComparison
from rea_plugins.cdp.model import StorageDiff
from rea_plugins.cdp.model import TargetDiff
from rea_plugins.cdp.model import Verdict
from rea_plugins.cdp.model import WebMcpChange
from rea_plugins.cdp.model import WebMcpDiff
from rea_plugins.cdp.model import WebMcpDiscovery

MAX_LISTED = 500


def _decode(value: Any, kind: type[Any], path: str) -> Any:
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise invalid_request(
            f"{path} is not a complete capture", [issue(path, "invalid_value", str(exc)[:300])]
        ) from None


def _scripts(before: Inspection, after: Inspection) -> ScriptsDiff:
    def keyed(ins: Inspection) -> dict[tuple[str, int], Any]:
        seen: Counter[str] = Counter()
        out = {}
        for s in sorted(ins.scripts.items, key=lambda s: (s.url, s.start_line, s.start_column)):
            out[(s.url, seen[s.url])] = s
            seen[s.url] += 1
        return out

    b, a = keyed(before), keyed(after)
    changed = []
    for key in sorted(set(a) & set(b)):
        x, y = b[key], a[key]
        if x.sha256 != y.sha256 or (x.sha256 is None and x.cdp_hash != y.cdp_hash):
            changed.append(
                ScriptChange(
                    url=key[0],
                    ordinal=key[1],
                    inline=y.inline,
                    before_sha256=x.sha256,
                    after_sha256=y.sha256,
                    before_length=x.length,
                    after_length=y.length,
                )
            )

    def brief(s: Any) -> ScriptBrief:
        return ScriptBrief(url=s.url, inline=s.inline, sha256=s.sha256, length=s.length)

    return ScriptsDiff(
        added=[brief(a[k]) for k in sorted(set(a) - set(b))][:MAX_LISTED],
        removed=[brief(b[k]) for k in sorted(set(b) - set(a))][:MAX_LISTED],
        changed=changed[:MAX_LISTED],
        changed_count=len(changed),
        unchanged_count=len(set(a) & set(b)) - len(changed),
    )


def _requests(ins: Inspection) -> set[tuple[str, str, str]]:
    # Repeated polling is one endpoint: requests compare as a set of (method, url, type).
    return {(r.method, r.url, r.resource_type or "") for r in ins.network.requests}


def _rows(items: list[Any], fields: tuple[str, ...]) -> list[JSONObject]:
    """The first listed of ``items`` (tuples of the compared fields, in order) as rows keyed by ``fields``."""
    return [dict(zip(fields, item, strict=True)) for item in items[:MAX_LISTED]]


def _ordered(items: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``items`` sorted with a missing field (None: a console message without text, a resource of unknown size)
    before any value, where comparing None with a value would raise."""
    return sorted(items, key=lambda item: tuple((v is not None, v) for v in item))


def _set_diff(before: set[Any], after: set[Any], fields: tuple[str, ...]) -> SetDiff:
    return SetDiff(
        added=_rows(_ordered(after - before), fields),
        removed=_rows(_ordered(before - after), fields),
        added_count=len(after - before),
        removed_count=len(before - after),
        unchanged_count=len(after & before),
    )


def _bag_diff(before: list[Any], after: list[Any], fields: tuple[str, ...]) -> SetDiff:
    """``_set_diff`` counting repeats: a message logged twice before and once after is one removed."""
    b, a = Counter(before), Counter(after)
    added = _ordered((a - b).elements())
    removed = _ordered((b - a).elements())
    return SetDiff(
        added=_rows(added, fields),
        removed=_rows(removed, fields),
        added_count=len(added),
        removed_count=len(removed),
        unchanged_count=sum((a & b).values()),
    )


def _webmcp(before: WebMcpDiscovery | None, after: WebMcpDiscovery | None) -> WebMcpDiff:
    if before is None or after is None:
        return WebMcpDiff(compared=False, reason="a side has no WebMCP discovery")
    b = {t.name: t for t in before.tools.items}
    a = {t.name: t for t in after.tools.items}
    changed = []
    for name in sorted(set(a) & set(b)):
        fields = [
            f
            for f in ("description", "input_schema_sha256", "declaration_kind", "annotations")
            if getattr(a[name], f) != getattr(b[name], f)
        ]
        if fields:
            changed.append(WebMcpChange(name=name, fields=fields))
    return WebMcpDiff(
        compared=True,
        status=[before.status, after.status],
        added=sorted(set(a) - set(b)),
        removed=sorted(set(b) - set(a)),
        changed=changed,
        complete=before.completeness.equality_eligible and after.completeness.equality_eligible,
    )


def compare_passive(before_raw: JSONObject, after_raw: JSONObject, ctx: CallContext) -> PassiveComparison:
    """Two passive captures, the caller's JSON ({inspection, webmcp?}), decoded into their records here."""
    before = _decode(before_raw["inspection"], Inspection, "before/inspection")
    after = _decode(after_raw["inspection"], Inspection, "after/inspection")
    wb = _decode(before_raw["webmcp"], WebMcpDiscovery, "before/webmcp") if before_raw.get("webmcp") else None
    wa = _decode(after_raw["webmcp"], WebMcpDiscovery, "after/webmcp") if after_raw.get("webmcp") else None
    ctx.check("comparing captures")
    target = TargetDiff(
        before_url=before.target.url,
        after_url=after.target.url,
        url_changed=before.target.url != after.target.url,
        title_changed=before.target.title != after.target.title,
    )
    dom = DomDiff(
        before_html_sha256=before.dom.html_sha256,
        after_html_sha256=after.dom.html_sha256,
        html_changed=before.dom.html_sha256 != after.dom.html_sha256,
        node_count_delta=after.dom.total_nodes - before.dom.total_nodes,
    )
    scripts = _scripts(before, after)
    network = _set_diff(_requests(before), _requests(after), ("method", "url", "resource_type"))
    webmcp = _webmcp(wb, wa)
    eligible = before.completeness.equality_eligible and after.completeness.equality_eligible and webmcp.complete
    differs = (
        target.url_changed
        or dom.html_changed
        or scripts.added
        or scripts.removed
        or scripts.changed
        or network.added_count
        or network.removed_count
        or webmcp.added
        or webmcp.removed
        or webmcp.changed
    )
    return PassiveComparison(
        family="passive",
        target=target,
        scripts=scripts,
        network=network,
        resources=_set_diff(
            {(r.url, r.type, r.content_size) for r in before.resources},
            {(r.url, r.type, r.content_size) for r in after.resources},
            ("url", "type", "content_size"),
        ),
        frames=_set_diff({f.url for f in before.frames}, {f.url for f in after.frames}, ("url",)),
        console=_bag_diff(
            [(e.level, e.text) for e in before.console.events],
            [(e.level, e.text) for e in after.console.events],
            ("level", "text"),
        ),
        dom=dom,
        forms=_set_diff(
            {(f.id or "", f.action or "", f.method, tuple((x.name or "") for x in f.fields)) for f in before.forms},
            {(f.id or "", f.action or "", f.method, tuple((x.name or "") for x in f.fields)) for f in after.forms},
            ("id", "action", "method", "field_names"),
        ),
        storage=StorageDiff(
            **{
                key: _set_diff(set(getattr(before.storage, key)), set(getattr(after.storage, key)), ("name",))
                for key in StorageDiff.__struct_fields__
            }
        ),
        webmcp=webmcp,
        equality_eligible=eligible,
        verdict=_verdict(bool(differs), eligible),
    )


def _verdict(differs: bool, eligible: bool) -> Verdict:
    if differs:
        return "different"
    return "no-difference-found" if eligible else "inconclusive"


# -- scenarios -------------------------------------------------------------------------------------


def check_scenario(capture: ScenarioCapture, path: str) -> None:
    """The invariants JSON Schema cannot state: counts, contiguous steps, event references."""
    problems = []
    if capture.events.retained != len(capture.events.items):
        problems.append(issue(f"{path}/events/retained", "invalid_value", "retained must equal len(items)"))
    if len(capture.steps) != capture.scenario.action_count + 1:
        problems.append(issue(f"{path}/steps", "invalid_value", "a capture has the start step and one per action"))
    if [s.step_index for s in capture.steps] != list(range(len(capture.steps))):
        problems.append(issue(f"{path}/steps", "invalid_value", "step indices must be contiguous from 0"))
    sequences = [e.sequence for e in capture.events.items]
    if sequences != sorted(set(sequences)):
        problems.append(issue(f"{path}/events/items", "invalid_value", "event sequences must strictly increase"))
    if any(e.step_index >= len(capture.steps) for e in capture.events.items):
        problems.append(issue(f"{path}/events/items", "invalid_value", "an event names an unknown step"))
    if problems:
        raise invalid_request(f"{path} breaks the capture's invariants", problems)


class _Rule(Record):
    """One literal normalization rule (the input schema requires every field)."""

    rule_id: str
    artifacts: list[str]
    match: str
    replacement: str


class _Normalizer:
    def __init__(self, rules: list[JSONObject]) -> None:
        self.rules = [msgspec.convert(rule, _Rule) for rule in rules]
        self.applied: Counter[str] = Counter()

    def __call__(self, artifact: str, text: str | None) -> str | None:
        if text is None:
            return None
        for rule in self.rules:
            if artifact in rule.artifacts and rule.match in text:
                self.applied[rule.rule_id] += text.count(rule.match)
                text = text.replace(rule.match, rule.replacement)
        return text


def _artifact_value(step: ScenarioStep, kind: str, norm: _Normalizer) -> tuple[str, Any]:
    """(state, comparable value) of one artifact after normalization."""
    art = getattr(step.artifacts, kind)
    state = msgspec.to_builtins(art)["state"]
    if state != "captured":
        return state, None
    value = art.value
    if kind == "url":
        return state, norm("url", value.url)
    if kind in ("dom", "title"):
        if value.truncated:
            return "truncated", value.sha256
        text = norm(kind, value.text) or ""
        return state, hashlib.sha256(text.encode()).hexdigest()
    if kind == "screenshot":
        return state, value.sha256
    return state, msgspec.to_builtins(value)


def _step_events(capture: ScenarioCapture, index: int | None, norm: _Normalizer) -> dict[str, set[Any]]:
    """Requests, console messages and page errors of one step (``None``: of the whole capture)."""
    requests, console, errors = set(), set(), set()
    for e in capture.events.items:
        if index is not None and e.step_index != index:
            continue
        if e.kind in ("request", "request-blocked") and e.url is not None:
            requests.add((e.kind, e.method or "", norm("network", e.url.url) or ""))
        elif e.kind == "console":
            console.add((e.level or "", norm("console", e.text) or ""))
        elif e.kind == "page-error":
            errors.add(norm("console", e.text) or "")
    return {"requests": requests, "console": console, "errors": errors}


def _events_diff(x: dict[str, set[Any]], y: dict[str, set[Any]]) -> EventsDiff:
    return EventsDiff(
        requests=_set_diff(x["requests"], y["requests"], ("kind", "method", "url")),
        console=_set_diff(x["console"], y["console"], ("level", "text")),
        page_errors=_set_diff({(t,) for t in x["errors"]}, {(t,) for t in y["errors"]}, ("text",)),
    )


def compare_scenarios(
    before_raw: JSONValue, after_raw: JSONValue, rules: list[JSONObject], ctx: CallContext
) -> ScenarioComparison:
    before = _decode(before_raw, ScenarioCapture, "before_scenario")
    after = _decode(after_raw, ScenarioCapture, "after_scenario")
    check_scenario(before, "before_scenario")
    check_scenario(after, "after_scenario")
    norm = _Normalizer(rules)
    b = {s.step_id: s for s in before.steps}
    a = {s.step_id: s for s in after.steps}
    aligned = [s.step_id for s in before.steps if s.step_id in a]
    order_same = aligned == [s.step_id for s in after.steps if s.step_id in b]
    steps = []
    eligible = before.completeness.equality_eligible and after.completeness.equality_eligible and order_same
    for step_id in aligned:
        ctx.check("comparing scenario steps")
        x, y = b[step_id], a[step_id]
        differences: list[ArtifactDifference] = []
        if (x.action, x.status) != (y.action, y.status):
            differences.append(
                ArtifactDifference(
                    artifact="step",
                    before={"action": x.action, "status": x.status},
                    after={"action": y.action, "status": y.status},
                )
            )
        for kind in ("url", "title", "dom", "screenshot", "storage"):
            (sx, vx), (sy, vy) = _artifact_value(x, kind, norm), _artifact_value(y, kind, norm)
            if sx != "captured" or sy != "captured":
                if {sx, sy} != {"not_requested"}:
                    eligible = eligible and sx == sy == "not_requested"
                if sx != sy:
                    differences.append(ArtifactDifference(artifact=kind, before={"state": sx}, after={"state": sy}))
                continue
            if vx != vy:
                differences.append(
                    ArtifactDifference(
                        artifact=kind,
                        before=vx if kind == "url" else {"digest": vx} if isinstance(vx, str) else vx,
                        after=vy if kind == "url" else {"digest": vy} if isinstance(vy, str) else vy,
                    )
                )
        events = _events_diff(_step_events(before, x.step_index, norm), _step_events(after, y.step_index, norm))
        changed_events = any(
            d.added_count or d.removed_count for d in (events.requests, events.console, events.page_errors)
        )
        steps.append(
            StepComparison(
                step_id=step_id,
                before_index=x.step_index,
                after_index=y.step_index,
                differences=differences,
                events=events,
                changed=bool(differences) or changed_events,
            )
        )
    only_before = [s.step_id for s in before.steps if s.step_id not in a]
    only_after = [s.step_id for s in after.steps if s.step_id not in b]
    if before.events.dropped or after.events.dropped:
        eligible = False
    overall = _events_diff(_step_events(before, None, norm), _step_events(after, None, norm))
    differs = bool(only_before or only_after or not order_same or any(s.changed for s in steps))
    return ScenarioComparison(
        family="scenario",
        normalization=Normalization(rules=rules, applied=dict(sorted(norm.applied.items()))),
        alignment=Alignment(aligned=aligned, only_before=only_before, only_after=only_after, order_matches=order_same),
        steps=steps,
        events=overall,
        equality_eligible=eligible,
        verdict=_verdict(differs, eligible),
    )


# -- screenshots -----------------------------------------------------------------------------------


def verified_png(artifact: JSONObject, path: str) -> bytes:
    """The PNG bytes of an artifact whose digest and size match its data."""
    try:
        data = base64.b64decode(str(artifact["data_base64"]), validate=True)
    except ValueError:
        raise invalid_request(
            f"{path} is not base64", [issue(f"{path}/data_base64", "invalid_format", "not base64")]
        ) from None
    if len(data) != artifact["bytes"] or hashlib.sha256(data).hexdigest() != artifact["sha256"]:
        raise ReaError(
            "evidence_integrity_mismatch",
            f"{path}: the PNG does not match its sha256 and bytes",
            details={"path": path, "reason": "artifact_digest_mismatch"},
        )
    return data


def compare_pngs(
    before: bytes, after: bytes, threshold: int, max_pixels: int, ctx: CallContext
) -> ScreenshotComparison:
    from PIL import ImageChops
    from PIL import ImageStat

    ctx.check("decoding screenshots")
    left = png.open_rgba(before, max_pixels, "before")
    right = png.open_rgba(after, max_pixels, "after")
    (bw, bh), (aw, ah) = left.size, right.size
    sides = {
        "before": ImageSide(sha256=hashlib.sha256(before).hexdigest(), width=bw, height=bh),
        "after": ImageSide(sha256=hashlib.sha256(after).hexdigest(), width=aw, height=ah),
    }
    if (bw, bh) != (aw, ah):
        return ScreenshotComparison(
            **sides,
            identical_bytes=False,
            dimensions_match=False,
            channel_threshold=threshold,
            total_pixels=None,
            changed_pixels=None,
            changed_ratio=None,
            max_channel_delta=None,
            mean_channel_delta=None,
            changed_bounds=None,
        )
    ctx.check("comparing pixels")
    # Per channel |before - after|; a pixel changed where its largest channel delta passes the threshold.
    diff = ImageChops.difference(left, right)
    max_delta = [int(high) for _, high in diff.getextrema()]  # type: ignore[misc]
    sums = ImageStat.Stat(diff).sum
    r, g, b, a = diff.split()
    largest = ImageChops.lighter(ImageChops.lighter(r, g), ImageChops.lighter(b, a))
    over = largest.point(lambda v: 255 if v > threshold else 0)
    changed = over.histogram()[255]
    box = over.getbbox()
    total = bw * bh
    return ScreenshotComparison(
        **sides,
        identical_bytes=before == after,
        dimensions_match=True,
        channel_threshold=threshold,
        total_pixels=total,
        changed_pixels=changed,
        changed_ratio=changed / total,
        max_channel_delta=Channels(**dict(zip("rgba", max_delta, strict=True))),
        mean_channel_delta=Channels(**{c: s / total for c, s in zip("rgba", sums, strict=True)}),
        changed_bounds=None
        if box is None
        else Bounds(x=box[0], y=box[1], width=box[2] - box[0], height=box[3] - box[1]),
    )

"""``rea providers list``: every plugin (name, distribution, version, hooks) and every provider."""

from __future__ import annotations

import msgspec

from rea.cli.output import emit_json
from rea.cli.output import table
from rea.errors import ErrorProjection
from rea.providers import Availability
from rea.records import JSONObject
from rea.records import Record
from rea.registry import BrokenPlugin
from rea.registry import PluginInfo
from rea.registry import Registry
from rea.selection import candidates


class ProviderRow(Record):
    """One provider as ``--json`` lists it (every field always present)."""

    id: str
    name: str
    version: str
    kind: str
    plugin: str | None
    auto_priority: int
    availability: Availability
    formats: list[str]
    operations: list[str]


class ProvidersReport(Record):
    """The stable ``--json`` document (documented in README, "rea providers list")."""

    plugins: list[PluginInfo]
    broken_plugins: list[BrokenPlugin]
    registry_errors: list[ErrorProjection]
    providers: list[ProviderRow]
    # An unpacker's or a driver's descriptor (each kind its own Struct) as its JSON, with the plugin that registered
    # it beside its fields.
    unpackers: list[JSONObject]
    scenario_drivers: list[JSONObject]
    projections: list[str]
    tool_count: int


def providers_report(registry: Registry) -> ProvidersReport:
    """The stable ``--json`` document (documented in README, "rea providers list")."""
    return ProvidersReport(
        plugins=[registry.plugins[n] for n in sorted(registry.plugins)],
        broken_plugins=list(registry.broken),
        registry_errors=[e.projection() for e in registry.errors],
        providers=[
            ProviderRow(
                id=c.provider_id,
                name=c.name,
                version=c.version,
                kind=c.kind,
                plugin=registry.owner.get(("provider", c.provider_id)),
                auto_priority=c.auto_priority,
                availability=c.availability,
                formats=list(c.formats),
                operations=list(c.operations),
            )
            for c in candidates(registry)
        ],
        unpackers=[
            dict(msgspec.to_builtins(registry.unpackers[u].descriptor), plugin=registry.owner.get(("unpacker", u)))
            for u in sorted(registry.unpackers)
        ],
        scenario_drivers=[
            dict(msgspec.to_builtins(registry.drivers[d].descriptor), plugin=registry.owner.get(("scenario driver", d)))
            for d in sorted(registry.drivers)
        ],
        projections=sorted(registry.projections),
        tool_count=len(registry.tools),
    )


def run(registry: Registry, as_json: bool) -> int:
    report = providers_report(registry)
    if as_json:
        emit_json(report)
        return 0
    print("Plugins")
    print(
        table(
            [
                [
                    p.name,
                    p.distribution or "-",
                    p.version or "-",
                    ", ".join(h.replace("rea_register_", "") for h in p.hooks),
                ]
                for p in report.plugins
            ],
            ["name", "distribution", "version", "hooks"],
        )
    )
    print("\nProviders")
    rows = []
    for p in report.providers:
        a = p.availability
        status = a.status if a.status == "available" else f"unavailable ({a.code}: {a.reason})"
        rows.append([p.id, p.kind, str(p.auto_priority), status, ", ".join(p.formats)])
    print(table(rows, ["id", "kind", "auto", "availability", "formats"]))
    for p in report.providers:
        if p.availability.status != "available" and p.availability.remediation:
            print(f"  {p.id}: {p.availability.remediation}")
    if report.unpackers:
        print("\nUnpackers: " + ", ".join(str(u["id"]) for u in report.unpackers))
    if report.broken_plugins:
        print("\nBroken plugins")
        print(
            table(
                [[b.name, b.distribution or "-", b.stage, b.error] for b in report.broken_plugins],
                ["name", "distribution", "stage", "error"],
            )
        )
    for err in report.registry_errors:
        print(f"\nregistry error: {err.message}")
    return 0

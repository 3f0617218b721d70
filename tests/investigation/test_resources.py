"""The resource mechanism: URI templates, registration through the hook, duplicates refused."""

from __future__ import annotations

from collections.abc import Callable

import pluggy

from rea import hookimpl
from rea.catalog.resource import ResourceDef
from rea.catalog.resource import ResourceSpec
from rea.catalog.resource import ResourceTemplateDef
from rea.registry import load
from rea.session import Session


def _text(session: Session, variables: dict[str, str]) -> str:
    return repr(sorted(variables.items()))


TEMPLATE = ResourceTemplateDef(
    uri_template="rea://thing/{kind}/{thing_id}", name="thing", title="A thing", description="d", reader=_text
)
FIXED = ResourceDef(uri="rea://things", name="things", title="Things", description="d", reader=_text)


def test_templates_bind_one_segment_per_variable() -> None:
    assert TEMPLATE.match("rea://thing/a/b") == {"kind": "a", "thing_id": "b"}
    assert TEMPLATE.match("rea://thing/a/b/c") is None
    assert TEMPLATE.match("rea://thing//b") is None
    assert TEMPLATE.match("rea://thing.a/b") is None
    assert FIXED.match("rea://things") == {} and FIXED.match("rea://things/") is None


class _Plugin:
    @hookimpl
    def rea_register_resources(self, register: Callable[[ResourceSpec], None]) -> None:
        register(FIXED)
        register(TEMPLATE)


def test_resources_register_through_the_hook_and_duplicates_are_errors(rea_pm: pluggy.PluginManager) -> None:
    reg = load(rea_pm, entry_points=False, extra=[("one", _Plugin()), ("two", _Plugin())])
    assert set(reg.resources) == {"rea://things", "rea://thing/{kind}/{thing_id}"}
    assert reg.owner[("resource", "rea://things")] == "one"
    assert [e.code for e in reg.errors] == ["configuration_invalid", "configuration_invalid"]

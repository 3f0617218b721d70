"""Issue 44 item 3: MCP's hints follow one rule from each tool's declared effects, over the whole catalog, and are
what a client sees in tools/list; advertised descriptions are whole sentences, never cut inside brackets."""

from __future__ import annotations

import anyio

from rea import registry as registry_mod
from rea.catalog.document import advertised_description
from rea.catalog.prose import first_sentence
from tests.mcp.harness import connect

# Effects that change something a caller could see: a tool declaring any of them is not read-only.
WRITES = (
    "mutates_target",
    "mutates_session",
    "writes_filesystem",
    "launches_process",
    "changes_ui_state",
    "may_discard_data",
    "executes_foreign_code",
    "mutates_device",
)


def test_every_tools_hints_follow_the_one_rule() -> None:
    reg = registry_mod.load()
    assert reg.tools
    for tool in reg.tools.values():
        e, hints = tool.effects, tool.effects.annotations()
        writes = [w for w in WRITES if getattr(e, w)]
        assert hints["readOnlyHint"] is (not writes), (tool.name, writes)
        assert hints["openWorldHint"] is (e.launches_process or e.accesses_network), tool.name
        assert hints["idempotentHint"] is e.idempotent, tool.name
        if hints["destructiveHint"]:
            assert not hints["readOnlyHint"], tool.name


def test_queries_are_read_only_and_writers_are_not() -> None:
    reg = registry_mod.load()

    def read_only(name: str) -> bool:
        return bool(reg.tools[name].effects.annotations()["readOnlyHint"])

    for name in ("list_procedures", "procedure_pseudo_code", "search_strings", "xrefs", "inspect_artifact"):
        assert read_only(name), name
    for name in (
        "set_address_name",  # changes the notebook
        "declare_c_types",
        "export_evidence_bundle",  # writes a file
        "extract_artifact",
        "capture_browser_scenario",  # drives a browser
        "capture_process_scenario",  # runs a program
        "open_binary",  # changes the session
    ):
        assert not read_only(name), name
    assert reg.tools["capture_process_scenario"].effects.annotations()["destructiveHint"]


def test_tools_list_carries_the_hints_of_the_catalog() -> None:
    reg = registry_mod.load()

    async def main() -> None:
        async with connect() as client:
            for tool in (await client.list_tools()).tools:
                assert tool.annotations is not None
                want = reg.tools[tool.name].effects.annotations()
                got = tool.annotations
                assert (got.read_only_hint, got.open_world_hint) == (want["readOnlyHint"], want["openWorldHint"])
                if want["readOnlyHint"]:
                    # MCP gives these two a meaning only for tools that are not read-only: they are not sent.
                    assert (got.destructive_hint, got.idempotent_hint) == (None, None), tool.name
                else:
                    assert (got.destructive_hint, got.idempotent_hint) == (
                        want["destructiveHint"],
                        want["idempotentHint"],
                    ), tool.name

    anyio.run(main)


def test_advertised_descriptions_are_whole_sentences() -> None:
    reg = registry_mod.load()
    for profile in ("full", "compact"):
        for tool in reg.tools.values():
            text = advertised_description(tool, profile)
            assert text.count("(") == text.count(")") and text.count("[") == text.count("]"), (tool.name, text)
            assert text.endswith((".", "…")), (tool.name, text)
    # A semicolon inside brackets does not end the sentence; the one after them does.
    assert first_sentence("Decompile one (provider text; never source); paged.", 200) == (
        "Decompile one (provider text; never source)."
    )
    assert first_sentence("A (b c d e f g h) i.", 8) == "A…"

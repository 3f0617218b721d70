"""procedure_data_flow: where one call's argument comes from inside a function, over the decompiler's p-code."""

from __future__ import annotations

from rea.plugin import DataFlow
from rea.plugin import Evidence
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.schema import ADDRESS_PATTERN
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import params_of
from rea_plugins.binary.core.schema import prop

OPERATION = "procedure_data_flow"


def _data_flow(call: ToolCall) -> Evidence:
    check_document(call)
    nb = annotate.notebook(call)
    params = annotate.selector(nb, params_of(call.args))
    result = call.session.execute(OPERATION, params, call.ctx)
    return evidence(call, annotate.apply(call, OPERATION, result, nb))


def tools() -> list[ToolDef]:
    return [
        binary_tool(
            name="procedure_data_flow",
            result_type=DataFlow,
            description="Where one call's argument comes from inside a function: the decompiler's p-code ops that "
            "compute it (backward over its SSA, bounded) and the constants, strings, data and inputs it starts from.",
            input_schema=obj(
                {
                    "procedure": PROCEDURE,
                    "site": prop(
                        "string",
                        "Address of the call instruction in the procedure.",
                        ["0x401150"],
                        pattern=ADDRESS_PATTERN,
                    ),
                    "argument": prop("integer", "The call's argument, 0-based.", [0], minimum=0, default=0),
                    "max_nodes": prop(
                        "integer", "Most p-code ops to follow.", [64], minimum=1, maximum=1000, default=64
                    ),
                    "document": DOCUMENT,
                },
                ("procedure", "site"),
            ),
            handler=_data_flow,
            requires_operations=(OPERATION,),
            cli_subject="procedure",
            examples=(
                {"procedure": "main", "site": "0x401150"},
                {"procedure": "main", "site": "0x401150", "argument": 1},
            ),
        )
    ]

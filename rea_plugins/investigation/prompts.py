"""REA's investigation prompts: each names the tools its workflow calls (listed only while they are registered)."""

from __future__ import annotations

from rea.plugin import PromptArgument
from rea.plugin import PromptDef

PATH = PromptArgument(name="path", description="Path of the target on the server's machine.")
BUNDLE = PromptArgument(name="bundle_path", description="An exported Evidence bundle of the original and the rebuild.")

VERIFY_RECONSTRUCTION = PromptDef(
    name="verify_reconstruction",
    title="Verify a reconstruction",
    description="Check that a rebuilt program shows every behaviour and structure observed in the original.",
    arguments=(BUNDLE,),
    tools=("build_reconstruction_obligation_ledger", "evaluate_reconstruction_coverage", "verify_reconstruction"),
    template=(
        "Verify the reconstruction whose Evidence is in the bundle {bundle_path}.\n"
        '1. build_reconstruction_obligation_ledger with evidence_bundle {{"path": "{bundle_path}"}}: page '
        "through the obligations (what the rebuild must show).\n"
        "2. evaluate_reconstruction_coverage with the same inputs: list obligations that are contradicted, "
        "unknown or uncovered.\n"
        "3. For each gap, name the comparison that would close it (compare_functions, compare_process_captures), "
        "then state your claims and check them with verify_reconstruction; pass needs complete comparison "
        "Evidence for every claim. Report the verdict and every open obligation."
    ),
)

TRACE_CRASH = PromptDef(
    name="trace_crash",
    title="Trace a crash",
    description="Reproduce a crash under a bounded capture and follow it to the code path that reaches it.",
    arguments=(
        PATH,
        PromptArgument(name="arguments", description="Command-line arguments that crash it.", required=False),
    ),
    tools=("open_binary", "capture_process_scenario", "analyze_function", "build_call_path", "record_unknown"),
    template=(
        "Trace the crash of {path} (arguments: {arguments}).\n"
        "1. open_binary {path}; capture_process_scenario with those arguments and a short timeout to observe "
        "the exit status, signal and output.\n"
        "2. analyze_function on main and the procedures the output or symbols point at; build_call_path from "
        "main to the suspected faulting procedure over those analyze_function records.\n"
        "3. record_unknown for anything the Evidence cannot settle (severity by impact, the probe that would "
        "answer it). Report the path to the crash with the evidence_id behind each step."
    ),
)

AUDIT_UNKNOWNS = PromptDef(
    name="audit_residual_unknowns",
    title="Audit residual unknowns",
    description="Review the open unknowns of an investigation and check that every resolved one still holds.",
    arguments=(PATH,),
    tools=("open_binary", "list_unknowns", "verify_unknown_resolution", "update_unknown"),
    template=(
        "Audit the residual unknowns of {path}.\n"
        "1. open_binary {path}; list_unknowns (status open, then blocked and contradicted), most severe first.\n"
        "2. For every resolved unknown, call verify_unknown_resolution; a failed check means the cited Evidence "
        "is missing or too weak: reopen it with update_unknown (status open, expected_revision its head).\n"
        "3. For each open unknown, say which recommended probe to run next and why."
    ),
)

PREPARE_CAPTURE = PromptDef(
    name="prepare_bounded_process_capture",
    title="Prepare a bounded process capture",
    description="Plan a process capture that answers one unknown within explicit time, output and file bounds.",
    arguments=(PATH, PromptArgument(name="unknown_id", description="The unknown the capture should answer.")),
    tools=("open_binary", "list_unknowns", "capture_process_scenario", "update_unknown"),
    template=(
        "Prepare a bounded capture of {path} that answers the unknown {unknown_id}.\n"
        "1. open_binary {path}; read the unknown with list_unknowns (or the resource rea://unknown/{unknown_id}): "
        "its required authority, confidence and environment.\n"
        "2. Choose arguments, a working directory, filesystem roots and a timeout; call "
        "capture_process_scenario with those bounds.\n"
        "3. If the capture answers the question, update_unknown with status resolved and a resolution citing "
        "the capture's evidence_id; otherwise record what it showed and keep it open."
    ),
)

PROMPTS = (VERIFY_RECONSTRUCTION, TRACE_CRASH, AUDIT_UNKNOWNS, PREPARE_CAPTURE)

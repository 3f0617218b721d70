"""Result shapes of the corpus tools (msgspec Structs: what each tool's normalized_result decodes into)."""

from __future__ import annotations

from typing import Literal

import msgspec

from rea.plugin import JSONObject
from rea.plugin import Paged
from rea.plugin import Record

SCHEMA_VERSION = 1
BINARY_OPERATION = "triage_corpus_binary"


# -- one binary (built in the worker; its Evidence goes into the index) --------------------------------------


class Mitigations(Record):
    """As inspect_binary_layout reports them: true, false, a level (relro, bti) or "unknown"."""

    nx: bool | str | None = None
    pie: bool | str | None = None
    relro: bool | str | None = None
    canary: bool | str | None = None
    fortify: bool | str | None = None
    cet_ibt: bool | str | None = None
    cet_shstk: bool | str | None = None
    bti: bool | str | None = None


class ImportRow(Record):
    name: str
    library: str | None = None
    kind: str | None = None


class ExportRow(Record):
    name: str
    address: str | None = None


class ProcedureHash(Record):
    address: str
    name: str
    instructions: int
    hash: str


class YaraMatch(Record):
    rule: str
    namespace: str = ""
    tags: list[str] = []


class BinaryRecord(Record):
    """What triage found in one binary."""

    schema_version: int = SCHEMA_VERSION
    sha256: str
    size: int
    format: str
    architecture: str | None
    bits: int | None = None
    entry: str | None = None
    interpreter: str | None = None
    needed: list[str] = []
    imports: list[ImportRow] = []
    exports: list[ExportRow] = []
    mitigations: Mitigations = msgspec.field(default_factory=Mitigations)
    procedure_count: int = 0
    string_count: int = 0
    strings: list[str] = []
    strings_truncated: bool = False
    procedures: list[ProcedureHash] = []
    procedures_truncated: bool = False
    yara: list[YaraMatch] = []


# -- triage_corpus ----------------------------------------------------------------------------------------


class FailureRow(Record):
    sha256: str
    paths: list[str]
    code: str
    message: str
    attempts: int = 1


class BinaryOutcome(Record):
    """What a worker hands back for one binary (pickled across the pool or from a Dask worker): ``done`` with its
    Evidence, or ``failed`` with the typed error's code and message and the attempts it took."""

    status: Literal["done", "failed"]
    # The Evidence record in its JSON form (rea's evidence.to_builtins): the index stores it as it is.
    evidence: JSONObject | None = None
    code: str | None = None
    message: str | None = None
    attempts: int = 1
    pid: int | None = None


class TriageCounts(msgspec.Struct, kw_only=True):
    # Counters triage adds to as it goes (so not frozen), all of them in the answer even at zero (so defaults
    # are not omitted): the one shape here that is not a Record.
    files_seen: int = 0
    binaries: int = 0
    duplicates: int = 0
    skipped_not_binary: int = 0
    skipped_unreadable: int = 0
    archives: int = 0
    already_indexed: int = 0
    analysed: int = 0
    failed: int = 0
    retried: int = 0


class CorpusTriage(Record):
    index: str
    corpus: str
    scheduler: str
    workers: int
    counts: TriageCounts
    elapsed_ms: int
    files_per_s: float
    failures: list[FailureRow] = []
    limitations: list[str] = []


# -- query_corpus -------------------------------------------------------------------------------------------


class BinaryRef(Record):
    sha256: str
    paths: list[str]
    evidence_id: str | None
    format: str | None = None
    architecture: str | None = None


class Match(Record):
    """One answer row: the binary, and what in it matched (names, strings, procedures, a library)."""

    binary: BinaryRef | None = None
    matched: list[str] = []
    library: str | None = None
    dependents: int | None = None
    hash: str | None = None
    where: list[BinaryRef] = []


class QueryPage(Paged):
    query: str
    corpus: str | None
    rows: list[Match]


# -- compare_corpora ----------------------------------------------------------------------------------------

ChangeKind = Literal["added", "removed", "changed"]


class ProcedureChange(Record):
    name: str
    change: ChangeKind
    left_hash: str | None = None
    right_hash: str | None = None


class BinaryChange(Record):
    path: str
    change: ChangeKind
    left: BinaryRef | None = None
    right: BinaryRef | None = None
    procedures: list[ProcedureChange] = []
    procedures_total: int = 0


class CorpusComparison(Paged):
    left: str
    right: str
    counts: dict[str, int]
    changes: list[BinaryChange]

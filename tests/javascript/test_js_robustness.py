"""Arbitrary input never crashes the fact extraction: broken syntax becomes diagnostics."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from rea_plugins.javascript import facts
from rea_plugins.javascript import sourcemaps
from rea_plugins.javascript.parallel import ScriptOut
from rea_plugins.javascript.parsed import parse_file

TOKENS = st.sampled_from(
    [
        "function",
        "f",
        "(",
        ")",
        "{",
        "}",
        "=>",
        "return",
        "import",
        "export",
        "default",
        "from",
        "'./a.js'",
        "require",
        "module.exports",
        "exports.x",
        "=",
        ";",
        ",",
        "class",
        "K",
        "extends",
        "async",
        "await",
        "`t${",
        "}`",
        '"s"',
        "[",
        "]",
        ".",
        "__commonJS",
        "// src/a.js\n",
        "\n",
        " ",
        "new",
        "preload",
        ":",
        "import(",
        "__webpack_require__",
        "0",
        "/* c */",
        "\\u{1F600}",
        "'\\x41'",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(TOKENS, max_size=80))
def test_token_soup_never_crashes(tokens: list[str]) -> None:
    source = " ".join(tokens).encode()
    for language in ("javascript", "typescript", "tsx"):
        found = facts.extract("soup.js", language, source)  # type: ignore[arg-type]
        assert len(found.units) == len(found.exports) == len(found.strings)
        assert all(f.line <= f.end_line for f in found.functions)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_crash(data: bytes) -> None:
    found = facts.extract("bytes.js", "javascript", data)
    assert found.units[0].path == "bytes.js"
    parsed = sourcemaps.parse(data, "dir")
    assert parsed.sources == [] or all(isinstance(s.path, str) for s in parsed.sources)


@settings(max_examples=100, deadline=None)
@given(st.lists(TOKENS, max_size=80), st.binary(max_size=200))
def test_a_parse_workers_answer_decodes_to_the_same_records(tokens: list[str], tail: bytes) -> None:
    # What a parse worker sends back (msgpack) is decoded, checked, into the records the server would have made.
    source = " ".join(tokens).encode() + tail
    for language in ("javascript", "typescript", "tsx"):
        parsed = parse_file("dist/soup.js", "not-declared", language, source)  # type: ignore[arg-type]
        wire = msgspec.msgpack.encode([ScriptOut(skipped=None, read=len(source), parsed=parsed)])
        (back,) = msgspec.msgpack.decode(wire, type=list[ScriptOut])
        assert back.parsed == parsed
        assert msgspec.json.encode(back.parsed) == msgspec.json.encode(parsed)
        # A cut answer is refused, never half read.
        try:
            msgspec.msgpack.decode(wire[: len(wire) // 2], type=list[ScriptOut])
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
        else:
            raise AssertionError("a cut answer decoded")


VLQ = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/,;!", max_size=120)


@settings(max_examples=150, deadline=None)
@given(VLQ, st.lists(st.one_of(st.none(), st.text(max_size=12)), max_size=4), st.integers(0, 3), st.integers(0, 500))
def test_hostile_mappings_decode_or_say_why(mappings: str, sources: list[str | None], line: int, column: int) -> None:
    # Any mappings string (bad VLQ, segments naming sources or names that are not there) is decoded by symbolic or
    # refused with a diagnostic; a lookup anywhere answers a token or nothing, never an exception.
    doc = {"version": 3, "sources": sources, "names": ["n"], "mappings": mappings}
    decoded = sourcemaps.decode(msgspec.json.encode(doc))
    if isinstance(decoded, sourcemaps.Decoded):
        token = decoded.lookup(line, column)
        assert token is None or (token.line >= 0 and token.column >= 0)
        assert sum(decoded.per_source().values()) <= decoded.tokens
    else:
        assert decoded.kind in ("source-map", "limit")


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_as_a_source_map_never_crash(data: bytes) -> None:
    decoded = sourcemaps.decode(data)
    assert isinstance(decoded, sourcemaps.Decoded) or decoded.message

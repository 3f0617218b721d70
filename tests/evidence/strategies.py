"""Hypothesis strategies for arbitrary JSON and for complete Evidence records."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from rea import evidence as ev_mod
from rea.evidence import Digest
from rea.evidence import Environment
from rea.evidence import Evidence
from rea.evidence import ProviderIdentity
from rea.evidence import Subject

SAFE_INT = 2**53 - 1

# Astral characters, the BMP private-use / specials block (where UTF-16 and code-point order differ),
# control characters and the JSON escapes, mixed with ordinary text.
_tricky = st.sampled_from(
    [
        "\U0001f600",
        "\U00010000",
        "\U0010ffff",
        "\ue000",
        "\uffff",
        "\ufb01",
        "\x00",
        "\x1f",
        "\x7f",
        "\u2028",
        '"',
        "\\",
        "/",
        "\b",
        "\t",
    ]
)
_chars = st.characters(codec="utf-8", exclude_categories=["Cs"])
text = st.lists(st.one_of(_chars, _tricky), max_size=8).map("".join)

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-SAFE_INT, SAFE_INT), st.floats(allow_nan=False, allow_infinity=False), text
)
json_values = st.recursive(
    json_scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(text, kids, max_size=4), max_leaves=24
)
# Integers of any size: outside JCS's number domain beyond 2**53.
wide_scalars = st.one_of(json_scalars, st.integers())
wide_values = st.recursive(
    wide_scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(text, kids, max_size=4), max_leaves=16
)

# Records: integers stay within JCS's domain, floats stay finite.
record_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-SAFE_INT, SAFE_INT),
        st.floats(allow_nan=False, allow_infinity=False),
        text,
    ),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(text, kids, max_size=3),
    max_leaves=10,
)
hex64 = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
providers = st.builds(
    ProviderIdentity,
    id=st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True),
    name=text,
    version=st.one_of(st.none(), text),
)
subjects = st.builds(
    Subject,
    name=text,
    local_path=text,
    digest=st.builds(Digest, sha256=hex64),
    size=st.integers(0, SAFE_INT),
    format=st.sampled_from(["elf", "pe", "mach-o", "file"]),
    architecture=st.sampled_from([None, "x86_64", "arm64"]),
)
environments = st.builds(
    Environment,
    id=text,
    platform=text,
    architecture=text,
    isolation=st.sampled_from(["none", "process", "container", "virtual-machine"]),
)


@st.composite
def records(draw: st.DrawFn) -> Evidence:
    provider = draw(providers)
    profile = draw(
        st.one_of(
            st.none(),
            st.dictionaries(text, record_json, max_size=3).map(lambda params: ev_mod.make_profile(provider, params)),
        )
    )
    return ev_mod.build(
        operation=draw(st.from_regex(r"[a-z_]{1,20}", fullmatch=True)),
        provider=provider,
        subject=draw(st.one_of(st.none(), subjects)),
        analysis_profile=profile,
        parameters=draw(st.dictionaries(text, record_json, max_size=3)),
        normalized_result=draw(record_json),
        raw_result=draw(record_json),
        confidence=draw(st.sampled_from(["observed", "derived", "inferred"])),
        authority=draw(st.sampled_from(["shipped-artifact", "controlled-replay", "analyst-inference"])),
        environment=draw(st.one_of(st.none(), environments)),
        limitations=draw(st.lists(text, max_size=2)),
        locations=draw(st.lists(st.fixed_dictionaries({"kind": st.just("address"), "address": text}), max_size=2)),
        evidence_links=draw(st.lists(hex64.map(lambda h: "ev_" + h), max_size=2)),
    )


def as_dict(ev: Evidence) -> dict[str, Any]:
    return ev_mod.to_builtins(ev)

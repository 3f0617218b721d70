"""Records proved canonical at construction (JcsRecord): the same bytes and digest as RFC 8785, no scan."""

from __future__ import annotations

import hashlib
from typing import Any
from typing import Literal

import msgspec
import pytest
import rfc8785
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from rea import canonical
from rea.canonical import CanonicalError
from rea.canonical import JcsRecord
from rea.canonical import canonical_digest
from rea.canonical import canonical_json

from .strategies import SAFE_INT
from .strategies import json_values
from .strategies import text

PROFILE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Leaf(JcsRecord, frozen=True, kw_only=True):
    address: str
    size: int
    kind: Literal["local", "import"]
    sites: list[int]
    note: str | None = None


class Branch(JcsRecord, frozen=True, kw_only=True):
    name: str
    exported: bool
    leaves: list[Leaf]
    pair: tuple[int, str]


class Loose(JcsRecord, frozen=True, kw_only=True):
    """Declares types a record cannot prove canonical: building one with such values fails."""

    ratio: float = 0
    extra: Any = None


class Envelope(msgspec.Struct, frozen=True, kw_only=True):
    """Like Evidence's projection: a plain Struct whose Any fields hold records and small parts."""

    operation: str
    parameters: dict[str, Any]
    result: Any
    limitations: list[str]


safe_ints = st.integers(-SAFE_INT, SAFE_INT)
leaves = st.builds(
    Leaf,
    address=text,
    size=safe_ints,
    kind=st.sampled_from(["local", "import"]),
    sites=st.lists(safe_ints, max_size=3),
    note=st.one_of(st.none(), text),
)
branches = st.builds(
    Branch, name=text, exported=st.booleans(), leaves=st.lists(leaves, max_size=4), pair=st.tuples(safe_ints, text)
)
envelopes = st.builds(
    Envelope,
    operation=text,
    parameters=st.dictionaries(text, json_values, max_size=3),
    result=st.one_of(branches, st.lists(leaves, max_size=3), json_values),
    limitations=st.lists(text, max_size=2),
)


def reference(value: Any) -> bytes:
    return rfc8785.dumps(msgspec.to_builtins(value))


@PROFILE
@given(envelopes)
def test_proved_records_encode_as_rfc8785(value: Envelope) -> None:
    expected = reference(value)
    assert canonical_json(value) == expected
    assert canonical_digest(value) == hashlib.sha256(expected).hexdigest()


@PROFILE
@given(branches)
def test_a_record_alone_is_proved_without_a_scan(value: Branch) -> None:
    assert canonical._proved(value)
    assert canonical_json(value) == reference(value)


@pytest.mark.parametrize("values", [{"ratio": 1.0}, {"extra": {"a": 1}}, {"extra": [1, [0.5]]}, {"extra": b"raw"}])
def test_values_without_a_proved_form_are_refused_when_a_record_is_built(values: dict[str, Any]) -> None:
    with pytest.raises(CanonicalError):
        Loose(**values)
    assert canonical._proved(Loose(ratio=3, extra=[1, "x", None, (True, "y")]))


@pytest.mark.parametrize("parameters", [{"f": 0.5}, {"\U0001f600": 1, "a": 2}, {"n": 2**60}])
def test_unproved_parts_fall_back_to_the_scan(parameters: dict[str, Any]) -> None:
    envelope = Envelope(operation="x", parameters=parameters, result=None, limitations=[])
    assert not canonical._proved(envelope)
    outcome: Any
    try:
        outcome = canonical_json(envelope)
    except CanonicalError:
        outcome = "rejected"
    try:
        expected: Any = reference(envelope)
    except (rfc8785.CanonicalizationError, ValueError):
        expected = "rejected"
    assert outcome == expected


@pytest.mark.parametrize("bad", [2**53, -(2**53), 2**64])
def test_integers_beyond_jcs_are_refused_when_a_record_is_built(bad: int) -> None:
    with pytest.raises(CanonicalError):
        Leaf(address="0x1", size=bad, kind="local", sites=[])
    with pytest.raises(CanonicalError):
        Leaf(address="0x1", size=1, kind="local", sites=[1, bad])
    with pytest.raises((msgspec.ValidationError, CanonicalError)):
        msgspec.convert({"address": "0x1", "size": bad, "kind": "local", "sites": []}, Leaf)
    with pytest.raises(CanonicalError):
        msgspec.structs.replace(Leaf(address="0x1", size=1, kind="local", sites=[]), size=bad)


def test_a_long_list_streams_to_the_same_digest_and_stats() -> None:
    count = canonical._STREAM_MIN + canonical._STREAM_ITEMS // 3
    items = [
        Leaf(address=hex(0x401000 + 16 * i), size=i, kind="local", sites=[i, -i], note='say "hi" \\ \U0001f600')
        for i in range(count)
    ]
    value = Envelope(
        operation="list_procedures",
        parameters={"limit": count},
        result=Branch(name="all", exported=False, leaves=items, pair=(1, "x")),
        limitations=["l"],
    )
    assert canonical._largest_list(value) is not None
    whole = canonical_json(value)
    assert whole == canonical._ENCODER.encode(value)
    stats: list[int] = []
    assert canonical_digest(value, stats) == hashlib.sha256(whole).hexdigest()
    assert stats == [len(whole), whole.count(b'"') + whole.count(b"\\")]
    small = Envelope(operation="x", parameters={}, result=items[:40], limitations=[])
    assert canonical_json(small) == reference(small)

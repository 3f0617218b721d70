"""rea.nesting: the depth read off the bytes equals the depth of the decoded value, on any interpreter."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rea.nesting import nests_deeper_than

_TEXT = st.text(alphabet='[]{}"\\ab', max_size=8)
_VALUES = st.recursive(
    st.none() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=30,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@given(_VALUES)
def test_the_depth_of_any_json_value_is_read_off_its_text(value: Any) -> None:
    text = json.dumps(value).encode()
    depth = _depth(value)
    assert not nests_deeper_than(text, depth)
    if depth:
        assert nests_deeper_than(text, depth - 1)


def test_brackets_in_strings_are_text_and_a_hostile_line_is_refused() -> None:
    assert not nests_deeper_than(b'["[[[[[[", "\\"[[[["]', 1)
    assert nests_deeper_than(b"[" * (20 << 20), 512)
    assert nests_deeper_than(b'{"a":' * 600 + b"1" + b"}" * 600, 512)
    assert not nests_deeper_than(b'{"a":' * 300 + b"1" + b"}" * 300, 512)

"""Function similarity: MinHash sketches of instruction n-grams (``datasketch``).

A procedure's sketch is the MinHash of the set of its normalized instructions' 1-, 2- and 3-grams (addresses and
constants masked, as ``rea.fingerprint`` normalizes them), so the Jaccard similarity of two procedures' n-gram
sets is estimated from two small arrays. compare_binaries draws its similarity candidates from a MinHash LSH
index of the leftovers; find_similar_functions (``compare.similar``) ranks procedures by it.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from datasketch import LeanMinHash as Sketch
else:
    Sketch = Any

# 64 permutations: a Jaccard estimate within about 0.06 (one standard error at 0.5), in 256 bytes a procedure.
NUM_PERM = 64
SEED = 1
DEFAULT_MIN_SIMILARITY = 0.5


def _low32(item: int) -> int:
    # The n-grams are already hashed to integers: MinHash needs them as 32-bit values, not rehashed as bytes.
    return item & 0xFFFFFFFF


def shingles(lines: array[int]) -> set[int]:
    """The 1-, 2- and 3-grams of a procedure's normalized-instruction hashes, each hashed to one integer."""
    out = set(lines)
    out.update(hash((lines[i], lines[i + 1])) for i in range(len(lines) - 1))
    out.update(hash((lines[i], lines[i + 1], lines[i + 2])) for i in range(len(lines) - 2))
    return out


def sketch(lines: array[int]) -> Sketch | None:
    """The MinHash of a procedure's n-grams (None when it has no instructions)."""
    from datasketch import LeanMinHash
    from datasketch import MinHash

    if not lines:
        return None
    m = MinHash(num_perm=NUM_PERM, seed=SEED, hashfunc=_low32)
    m.update_batch(shingles(lines))
    # Lean: the hash values and the seed only (the permutations are the same for every sketch of a seed).
    return LeanMinHash(m)


def jaccard(a: Sketch, b: Sketch) -> float:
    """The estimated Jaccard similarity of two procedures' n-gram sets."""
    return float(a.jaccard(b))


class Index:
    """A MinHash LSH index of sketches: the keys whose similarity to a query likely passes ``threshold``."""

    def __init__(self, threshold: float) -> None:
        from datasketch import MinHashLSH

        self._lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
        self._sketches: dict[str, Sketch] = {}

    def add(self, key: str, values: Sketch) -> None:
        self._lsh.insert(key, values)
        self._sketches[key] = values

    def query(self, values: Sketch) -> list[tuple[float, str]]:
        """(estimated similarity, key) of the candidates, most similar first."""
        found = self._lsh.query(values)
        return sorted(((jaccard(values, self._sketches[k]), k) for k in found), key=lambda sk: (-sk[0], sk[1]))

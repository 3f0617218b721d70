"""What a client is sent of a description: its first sentence (the catalog document keeps the whole text).

The kernel's catalog document and the schema projections (a plugin) cut descriptions the same way, so the rule
lives here, below both.
"""

from __future__ import annotations


def first_sentence(text: str, limit: int) -> str:
    """The first sentence of ``text``, ended by a full stop (at most ``limit`` characters, cut at a word with an
    ellipsis). A stop or semicolon inside brackets does not end it, and a cut never leaves a bracket open: a
    client should never read "(provider text" as a tool's whole description."""
    depth, end = 0, len(text)
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth = max(0, depth - 1)
        elif c in ".;" and depth == 0 and (i + 1 == len(text) or text[i + 1] == " "):
            end = i + 1
            break
    sentence = text[:end].strip().rstrip(";,: ")
    if sentence and not sentence.endswith((".", "!", "?")):
        sentence += "."
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 1].rsplit(" ", 1)[0]
    while cut.count("(") > cut.count(")") or cut.count("[") > cut.count("]"):
        cut = cut[: max(cut.rfind("("), cut.rfind("["))]
    return cut.rstrip(" ,;:") + "…"

"""The search room: what is in the code and data. Byte patterns, constants, instruction text and YARA rules over the
whole program, strings (the short ones code loads too), and the cryptographic primitives a binary holds."""

"""The workflows room: answers composed from many operations. The first overview, a function's dossier, batch
decompilation, a feature traced to its callers, the imported API by purpose, engine facts with a generic floor, and
the family's prompts."""

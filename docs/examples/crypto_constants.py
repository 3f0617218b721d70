# ruff: noqa: F821 -- rea (the tools) and args (the caller's JSON values) are globals the runner gives a script
"""Every function that uses a well-known cryptographic constant, and who calls it.

args: {"constants": {"name": "0x..."} to look for instead of the built-in table (optional)}
"""

CONSTANTS = args.get(
    "constants",
    {
        "TEA/XTEA delta": "0x9e3779b9",
        "CRC-32 polynomial (reflected)": "0xedb88320",
        "MD5 T[1]": "0xd76aa478",
        "SHA-1 K0": "0x5a827999",
        "SHA-256 K[0]": "0x428a2f98",
        "SHA-256 H0": "0x6a09e667",
        "ChaCha20 'expa'": "0x61707865",
        "Blowfish P[0]": "0x243f6a88",
    },
)

users = {}  # procedure entry -> what it uses
for name, value in CONSTANTS.items():
    hits = rea.search_immediates(value=value, limit=200)["hits"]
    for hit in hits:
        procedure = hit.get("procedure")
        if hit["where"] == "code" and procedure:
            entries = [procedure]
        else:
            # A constant in a data table: the procedures that refer to the table.
            refs = rea.xrefs(address=hit["address"])["references"]
            entries = [{"address": r["from_procedure"], "name": None} for r in refs if r.get("from_procedure")]
        for entry in entries:
            row = users.setdefault(entry["address"], {"procedure": entry, "constants": set()})
            row["constants"].add(name)

rows = []
for address, row in sorted(users.items()):
    callers = rea.procedure_callers(procedure=address)
    procedure = callers["procedure"]
    constants = sorted(row["constants"])
    print(f"{procedure['name'] or address}: {', '.join(constants)}")
    rows.append(
        {
            "procedure": procedure,
            "constants": constants,
            "callers": [c["name"] or c["address"] for c in callers["callers"]],
        }
    )

rea.answer({"functions": rows, "constants_searched": len(CONSTANTS)})

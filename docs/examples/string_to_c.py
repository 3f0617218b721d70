# ruff: noqa: F821 -- rea (the tools) and args (the caller's JSON values) are globals the runner gives a script
"""From a string to C: its references, the procedures that use it, their callers, and each one's C.

args: {"needle": text to look for (default "password"), "max_strings": how many matches to follow (default 5)}
"""

needle = args.get("needle", "password")
max_strings = args.get("max_strings", 5)


def procedures_using(address):
    """Entries of the procedures whose code refers to address: directly, or through one pointer in data."""
    found = set()
    refs = rea.xrefs(address=address)
    for ref in refs["references"]:
        if ref.get("from_procedure"):
            found.add(ref["from_procedure"])
        else:
            # A pointer to the string kept in data (static const char *p = "..."): who reads the pointer.
            for read in rea.xrefs(address=ref["from"])["references"]:
                if read.get("from_procedure"):
                    found.add(read["from_procedure"])
    for use in refs.get("through_arrays", []):
        found.add(use["procedure"])
    return sorted(found)


def c_of(procedure):
    return rea.procedure_pseudo_code(procedure=procedure, limit=200)["text"]


report = []
for string in rea.search_strings(pattern=needle, limit=max_strings)["strings"]:
    for entry in procedures_using(string["address"]):
        callers = rea.procedure_callers(procedure=entry)
        user = callers["procedure"]
        print(f"{string['value']!r} at {string['address']} is used by {user['name'] or user['address']}")
        report.append(
            {
                "string": string["value"],
                "address": string["address"],
                "procedure": user,
                "c": c_of(user["address"]),
                "callers": [
                    {"name": c["name"], "address": c["address"], "call_sites": c["call_sites"], "c": c_of(c["address"])}
                    for c in callers["callers"]
                ],
            }
        )

result = report

# ruff: noqa: F821 -- rea (the tools) and args (the caller's JSON values) are globals the runner gives a script
"""A summary of what changed between two open versions of a binary, with the C of each changed function.

Open both first (open_binary with alias "old" and alias "new"), then run this script.
args: {"left": alias or target_id (default "old"), "right": (default "new"), "max_c": changed functions to
decompile on both sides (default 5)}
"""

left, right = args.get("left", "old"), args.get("right", "new")
max_c = args.get("max_c", 5)

diff = rea.compare_binaries(left=left, right=right, limit=1000)
counts = diff["counts"]
print(f"{counts['changed']} changed, {counts['added']} added, {counts['removed']} removed")
print(f"{counts['unchanged']} unchanged")

changed, added, removed = [], [], []
for item in diff["items"]:
    if item["status"] == "changed":
        changed.append(item)
    elif item["status"] == "added":
        added.append(item["right"]["name"] or item["right"]["address"])
    elif item["status"] == "removed":
        removed.append(item["left"]["name"] or item["left"]["address"])

# The least similar first: the likeliest to matter.
changed.sort(key=lambda item: item.get("similarity", 0.0))
details = []
for item in changed[:max_c]:
    before = rea.procedure_pseudo_code(procedure=item["left"]["address"], target=left, limit=200)["text"]
    after = rea.procedure_pseudo_code(procedure=item["right"]["address"], target=right, limit=200)["text"]
    details.append(
        {
            "name": item["right"]["name"] or item["right"]["address"],
            "similarity": item.get("similarity"),
            "before": before,
            "after": after,
        }
    )
    print(f"changed: {details[-1]['name']} (similarity {item.get('similarity')})")

result = {
    "counts": counts,
    "complete": diff["complete"],
    "added": added,
    "removed": removed,
    "changed": details,
}

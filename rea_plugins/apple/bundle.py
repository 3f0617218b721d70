"""trace_dylib_resolution: each dylib a bundle's Mach-O images load, resolved as dyld would, to a file or not."""

from __future__ import annotations

import os

from rea.plugin import Evidence
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import identify
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import open_regular
from rea_plugins.apple import common
from rea_plugins.apple.macho import loaded_libraries
from rea_plugins.apple.model import DylibResolution
from rea_plugins.apple.model import Resolution
from rea_plugins.apple.plists import bundle_of

MAX_IMAGES = 2000
# Where a system library lives on an Apple device (the dyld shared cache): never inside an app.
SYSTEM_PREFIXES = ("/usr/lib/", "/System/", "/Library/Apple/", "/usr/local/lib/")


def _is_macho(path: str) -> bool:
    try:
        with os.fdopen(open_regular(path), "rb") as fh:  # never blocks on a FIFO placed in the bundle
            return fh.read(4) in (*common.THIN_MAGIC, *common.FAT_MAGIC)
    except (OSError, ReaError):
        return False


def images_of(bundle: str, main: str) -> list[str]:
    """The main executable first, then every other Mach-O file of the bundle, sorted, at most MAX_IMAGES."""
    found = [main]
    for root, dirs, files in os.walk(bundle):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            if path != main and not os.path.islink(path) and os.path.isfile(path) and _is_macho(path):
                found.append(path)
                if len(found) >= MAX_IMAGES:
                    return found
    return found


def _expand(path: str, loader: str, executable: str) -> str:
    if path.startswith("@loader_path/"):
        return os.path.normpath(os.path.join(os.path.dirname(loader), path[len("@loader_path/") :]))
    if path.startswith("@executable_path/"):
        return os.path.normpath(os.path.join(os.path.dirname(executable), path[len("@executable_path/") :]))
    return path


def _inside(path: str, bundle: str) -> bool:
    return os.path.commonpath([os.path.abspath(path), bundle]) == bundle


def resolve(
    name: str, loader: str, executable: str, rpaths: list[str], bundle: str
) -> tuple[str, str | None, list[str]]:
    """(status, file, paths tried) for one install name: ``bundle`` (a file inside), ``system`` or ``missing``."""
    if name.startswith("@rpath/"):
        rest = name[len("@rpath/") :]
        tried = [os.path.join(_expand(r, loader, executable), rest) for r in rpaths]
    else:
        tried = [_expand(name, loader, executable)]
    for candidate in tried:
        if candidate.startswith("@"):
            continue
        if _inside(candidate, bundle) and os.path.isfile(candidate):
            return "bundle", os.path.relpath(os.path.realpath(candidate), bundle), [_show(t, bundle) for t in tried]
    for candidate in tried:
        if candidate.startswith(SYSTEM_PREFIXES):
            return "system", candidate, [_show(t, bundle) for t in tried]
    if not name.startswith("@") and name.startswith(SYSTEM_PREFIXES):
        return "system", name, [name]
    return "missing", None, [_show(t, bundle) for t in tried]


def _show(path: str, bundle: str) -> str:
    return os.path.relpath(path, bundle) if path.startswith("/") and _inside(path, bundle) else path


@common.guarded
def trace_dylib_resolution(call: ToolCall) -> Evidence:
    path = common.given_path(call)
    bundle = path if os.path.isdir(path) else bundle_of(path)
    if bundle is None:
        raise invalid_request(
            f"{path} is not an .app/.framework bundle or inside one",
            [issue("path", "invalid_value", "pass the bundle folder or a Mach-O file inside it")],
        )
    bundle = os.path.realpath(bundle)
    main = common.bundle_executable(bundle) if os.path.isdir(path) else os.path.realpath(path)
    if main is None:
        raise invalid_request(f"{bundle} has no bundle executable", [issue("path", "invalid_value", "no executable")])
    main = os.path.realpath(main)
    images = images_of(bundle, main)
    exe_rpaths: list[str] = []
    rows: list[Resolution] = []
    for n, image in enumerate(images):
        call.ctx.check()
        call.ctx.progress("resolving dylibs", done=n, total=len(images))
        try:
            f = common.MachOFile(common.read_bytes(identify(image, call.ctx)))
        except ReaError:  # a damaged image inside the bundle is reported; the others still resolve
            rows.append(
                Resolution(image=os.path.relpath(image, bundle), library="", command="unreadable", status="missing")
            )
            continue
        b = f.binaries[0]
        rpaths = [str(r.path) for r in b.rpaths]
        # An executable inside the bundle (an app extension, a helper) is its own process's @executable_path.
        own = image == main or common.enum_name(b.header.file_type) == "EXECUTE"
        if image == main:
            exe_rpaths = rpaths
        # dyld searches the loading image's rpaths, then those of the images that loaded it (here: the executable).
        search = rpaths if own else rpaths + [r for r in exe_rpaths if r not in rpaths]
        for lib in loaded_libraries(b):
            status, resolved, tried = resolve(str(lib.name), image, image if own else main, search, bundle)
            rows.append(
                Resolution(
                    image=os.path.relpath(image, bundle),
                    library=str(lib.name),
                    command=common.enum_name(lib.command).lower(),
                    status=status,  # type: ignore[arg-type]
                    resolved=resolved,
                    tried=tried[:16],
                )
            )
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    chosen, info = common.page(rows, call.args, "", 200)
    report = DylibResolution(
        bundle=os.path.basename(bundle),
        executable=os.path.relpath(main, bundle),
        images=len(images),
        resolutions=chosen,
        page=info,
        counts=counts,
    )
    target = identify(bundle, call.ctx, allow_directory=True)
    limits = ["Each image is resolved for its first slice."]
    if len(images) >= MAX_IMAGES:
        limits.append(f"only the first {MAX_IMAGES} Mach-O files of the bundle were read")
    return common.evidence(call, target, report, limits)

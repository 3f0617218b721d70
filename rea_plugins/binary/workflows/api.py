"""inspect_native_api: the imported API surface, grouped by library and by purpose.

Imports come from ``binary_layout`` (name, library, slot) where the provider has it, else from the
import procedures; callers from ``xrefs`` on each import's stub (bounded by ``max_operations``).
Purposes are rea's own classification of well-known C, POSIX and Win32 names (``PURPOSES``).
"""

from __future__ import annotations

import re

from msgspec import UNSET
from msgspec import UnsetType

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import objects_in
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import ApiCaller
from rea_plugins.binary.core.shapes import ApiPurpose
from rea_plugins.binary.core.shapes import ApiSurface
from rea_plugins.binary.graph.crossbinary import needed_libraries

PAGE = 1000
MAX_PROCEDURES = 200_000

# purpose: (what it covers, exact names). Lookups also try the name without Win32's A/W suffix.
PURPOSES: dict[str, tuple[str, tuple[str, ...]]] = {
    "console-io": (
        "formatted and character I/O on standard streams",
        (
            "printf",
            "puts",
            "putchar",
            "getchar",
            "gets",
            "scanf",
            "vprintf",
            "perror",
            "fputs",
            "fputc",
            "putc",
            "fgetc",
            "getc",
            "fgets",
            "fprintf",
            "vfprintf",
            "fscanf",
            "sscanf",
            "sprintf",
            "snprintf",
            "vsprintf",
            "vsnprintf",
            "__printf_chk",
            "__fprintf_chk",
            "__sprintf_chk",
            "__snprintf_chk",
            "__vfprintf_chk",
            "__iob_func",
            "__acrt_iob_func",
            "WriteConsole",
            "ReadConsole",
            "GetStdHandle",
            "AllocConsole",
            "stdin",
            "stdout",
            "stderr",
            "_iob",
        ),
    ),
    "string": (
        "string and character handling",
        (
            "strlen",
            "strnlen",
            "strcpy",
            "strncpy",
            "strcat",
            "strncat",
            "strcmp",
            "strncmp",
            "strcasecmp",
            "strncasecmp",
            "strchr",
            "strrchr",
            "strstr",
            "strtok",
            "strtok_r",
            "strdup",
            "strndup",
            "strspn",
            "strcspn",
            "strpbrk",
            "strerror",
            "strcoll",
            "strxfrm",
            "strtol",
            "strtoul",
            "strtoll",
            "strtoull",
            "strtod",
            "strtof",
            "atoi",
            "atol",
            "atof",
            "toupper",
            "tolower",
            "isalpha",
            "isdigit",
            "isspace",
            "isalnum",
            "isupper",
            "islower",
            "isprint",
            "isxdigit",
            "__ctype_b_loc",
            "__ctype_toupper_loc",
            "__ctype_tolower_loc",
            "wcslen",
            "wcscpy",
            "wcscmp",
            "mbstowcs",
            "wcstombs",
            "__strcpy_chk",
            "__strcat_chk",
            "lstrlen",
            "lstrcpy",
            "lstrcmp",
            "MultiByteToWideChar",
            "WideCharToMultiByte",
        ),
    ),
    "memory": (
        "heap allocation and memory blocks",
        (
            "malloc",
            "calloc",
            "realloc",
            "free",
            "reallocarray",
            "aligned_alloc",
            "posix_memalign",
            "memalign",
            "memcpy",
            "memmove",
            "memset",
            "memcmp",
            "memchr",
            "__memcpy_chk",
            "__memset_chk",
            "__memmove_chk",
            "mmap",
            "munmap",
            "mprotect",
            "brk",
            "sbrk",
            "HeapAlloc",
            "HeapFree",
            "HeapReAlloc",
            "GetProcessHeap",
            "VirtualAlloc",
            "VirtualFree",
            "VirtualProtect",
            "VirtualQuery",
            "LocalAlloc",
            "LocalFree",
            "GlobalAlloc",
            "GlobalFree",
            "RtlMoveMemory",
            "RtlZeroMemory",
        ),
    ),
    "file-io": (
        "files, directories and descriptors",
        (
            "fopen",
            "fclose",
            "fread",
            "fwrite",
            "fseek",
            "ftell",
            "rewind",
            "fflush",
            "feof",
            "ferror",
            "fileno",
            "fdopen",
            "freopen",
            "open",
            "open64",
            "openat",
            "close",
            "read",
            "write",
            "pread",
            "pwrite",
            "lseek",
            "stat",
            "fstat",
            "lstat",
            "__xstat",
            "__fxstat",
            "__lxstat",
            "access",
            "unlink",
            "rename",
            "mkdir",
            "rmdir",
            "opendir",
            "readdir",
            "closedir",
            "chdir",
            "getcwd",
            "chmod",
            "chown",
            "dup",
            "dup2",
            "fcntl",
            "ioctl",
            "readlink",
            "realpath",
            "truncate",
            "ftruncate",
            "fsync",
            "setmode",
            "commit",
            "wfopen",
            "wopen",
            "get_osfhandle",
            "open_osfhandle",
            "CreateFile",
            "ReadFile",
            "WriteFile",
            "CloseHandle",
            "DeleteFile",
            "FindFirstFile",
            "FindNextFile",
            "FindClose",
            "GetFileSize",
            "SetFilePointer",
            "GetFileAttributes",
            "CreateDirectory",
            "MoveFile",
            "CopyFile",
        ),
    ),
    "process": (
        "process creation, exit and control",
        (
            "exit",
            "_exit",
            "_Exit",
            "abort",
            "atexit",
            "fork",
            "vfork",
            "execve",
            "execv",
            "execvp",
            "execl",
            "execlp",
            "system",
            "popen",
            "pclose",
            "wait",
            "waitpid",
            "kill",
            "getpid",
            "getppid",
            "getuid",
            "geteuid",
            "getgid",
            "setuid",
            "setgid",
            "raise",
            "signal",
            "sigaction",
            "sigprocmask",
            "ptrace",
            "prctl",
            "_cexit",
            "_amsg_exit",
            "_onexit",
            "CreateProcess",
            "ExitProcess",
            "TerminateProcess",
            "GetCurrentProcess",
            "GetCurrentProcessId",
            "OpenProcess",
            "ShellExecute",
            "WinExec",
        ),
    ),
    "threading": (
        "threads and synchronization",
        (
            "pthread_create",
            "pthread_join",
            "pthread_detach",
            "pthread_self",
            "pthread_mutex_lock",
            "pthread_mutex_unlock",
            "pthread_mutex_init",
            "pthread_mutex_destroy",
            "pthread_cond_wait",
            "pthread_cond_signal",
            "pthread_cond_broadcast",
            "pthread_once",
            "pthread_key_create",
            "pthread_getspecific",
            "pthread_setspecific",
            "sem_wait",
            "sem_post",
            "CreateThread",
            "ExitThread",
            "WaitForSingleObject",
            "WaitForMultipleObjects",
            "CreateMutex",
            "ReleaseMutex",
            "CreateEvent",
            "SetEvent",
            "ResetEvent",
            "Sleep",
            "SleepEx",
            "InitializeCriticalSection",
            "EnterCriticalSection",
            "LeaveCriticalSection",
            "DeleteCriticalSection",
            "TlsAlloc",
            "TlsGetValue",
            "TlsSetValue",
            "GetCurrentThreadId",
        ),
    ),
    "network": (
        "sockets, name resolution and HTTP",
        (
            "socket",
            "connect",
            "bind",
            "listen",
            "accept",
            "accept4",
            "send",
            "sendto",
            "sendmsg",
            "recv",
            "recvfrom",
            "recvmsg",
            "shutdown",
            "setsockopt",
            "getsockopt",
            "getaddrinfo",
            "freeaddrinfo",
            "gethostbyname",
            "inet_addr",
            "inet_ntoa",
            "inet_pton",
            "inet_ntop",
            "htons",
            "htonl",
            "ntohs",
            "ntohl",
            "select",
            "poll",
            "epoll_create",
            "epoll_ctl",
            "epoll_wait",
            "closesocket",
            "WSAStartup",
            "WSACleanup",
            "WSAGetLastError",
            "InternetOpen",
            "InternetOpenUrl",
            "InternetReadFile",
            "HttpSendRequest",
            "WinHttpOpen",
            "WinHttpConnect",
            "WinHttpSendRequest",
            "URLDownloadToFile",
            "curl_easy_init",
            "curl_easy_perform",
        ),
    ),
    "crypto": (
        "cryptography and randomness",
        (
            "rand",
            "srand",
            "random",
            "srandom",
            "arc4random",
            "getrandom",
            "RAND_bytes",
            "CryptAcquireContext",
            "CryptGenRandom",
            "CryptEncrypt",
            "CryptDecrypt",
            "CryptCreateHash",
            "CryptHashData",
            "BCryptGenRandom",
            "BCryptEncrypt",
            "BCryptDecrypt",
            "SystemFunction036",
        ),
    ),
    "time": (
        "clocks, dates and timers",
        (
            "time",
            "clock",
            "clock_gettime",
            "gettimeofday",
            "localtime",
            "localtime_r",
            "gmtime",
            "gmtime_r",
            "mktime",
            "strftime",
            "difftime",
            "nanosleep",
            "usleep",
            "sleep",
            "alarm",
            "GetTickCount",
            "GetTickCount64",
            "QueryPerformanceCounter",
            "QueryPerformanceFrequency",
            "GetSystemTime",
            "GetLocalTime",
            "GetSystemTimeAsFileTime",
        ),
    ),
    "environment": (
        "environment, arguments and configuration",
        (
            "getenv",
            "secure_getenv",
            "setenv",
            "unsetenv",
            "putenv",
            "getopt",
            "getopt_long",
            "sysconf",
            "uname",
            "gethostname",
            "__getmainargs",
            "__wgetmainargs",
            "__initenv",
            "_acmdln",
            "GetCommandLine",
            "GetEnvironmentVariable",
            "SetEnvironmentVariable",
            "GetStartupInfo",
            "GetModuleFileName",
            "GetSystemInfo",
            "GetVersionEx",
        ),
    ),
    "dynamic-loading": (
        "loading libraries and resolving symbols at run time",
        (
            "dlopen",
            "dlsym",
            "dlclose",
            "dlerror",
            "dladdr",
            "LoadLibrary",
            "LoadLibraryEx",
            "GetProcAddress",
            "FreeLibrary",
            "GetModuleHandle",
        ),
    ),
    "error-handling": (
        "errors and exception dispatch",
        (
            "__errno_location",
            "__error",
            "_errno",
            "GetLastError",
            "SetLastError",
            "SetUnhandledExceptionFilter",
            "UnhandledExceptionFilter",
            "RaiseException",
            "RtlUnwindEx",
            "__C_specific_handler",
            "_setjmp",
            "setjmp",
            "longjmp",
            "__stack_chk_fail",
            "__assert_fail",
        ),
    ),
    "registry": (
        "the Windows registry",
        (
            "RegOpenKeyEx",
            "RegQueryValueEx",
            "RegSetValueEx",
            "RegCreateKeyEx",
            "RegCloseKey",
            "RegDeleteKey",
            "RegDeleteValue",
            "RegEnumKeyEx",
            "RegEnumValue",
        ),
    ),
    "runtime": (
        "C/C++ runtime start-up and support",
        (
            "__libc_start_main",
            "__cxa_finalize",
            "__cxa_atexit",
            "__gmon_start__",
            "_ITM_registerTMCloneTable",
            "_ITM_deregisterTMCloneTable",
            "_initterm",
            "_initterm_e",
            "__set_app_type",
            "__setusermatherr",
            "_commode",
            "_fmode",
            "_set_invalid_parameter_handler",
            "__cxa_begin_catch",
            "__cxa_end_catch",
            "__cxa_throw",
            "__cxa_allocate_exception",
            "__gxx_personality_v0",
            "_Unwind_Resume",
            "dyld_stub_binder",
            "__stack_chk_guard",
            "_Znwm",
            "_ZdlPv",
            "_Znam",
            "_ZdaPv",
        ),
    ),
    "math": (
        "floating-point and integer math",
        (
            "sqrt",
            "pow",
            "exp",
            "log",
            "log10",
            "sin",
            "cos",
            "tan",
            "atan",
            "atan2",
            "floor",
            "ceil",
            "fabs",
            "fmod",
            "round",
            "abs",
            "labs",
            "div",
            "ldiv",
            "sqrtf",
            "powf",
            "expf",
            "logf",
            "floorf",
            "ceilf",
        ),
    ),
    "locale": (
        "locales and character sets",
        (
            "setlocale",
            "localeconv",
            "nl_langinfo",
            "iconv",
            "iconv_open",
            "iconv_close",
            "bindtextdomain",
            "textdomain",
            "dcgettext",
            "gettext",
            "GetACP",
            "GetLocaleInfo",
        ),
    ),
}
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("pthread_", "threading"),
    ("sem_", "threading"),
    ("SSL_", "crypto"),
    ("EVP_", "crypto"),
    ("Crypt", "crypto"),
    ("BCrypt", "crypto"),
    ("WSA", "network"),
    ("Internet", "network"),
    ("WinHttp", "network"),
    ("curl_", "network"),
    ("__cxa_", "runtime"),
    ("_Unwind_", "runtime"),
    ("__libc_", "runtime"),
)
_BY_NAME = {name: purpose for purpose, (_, names) in PURPOSES.items() for name in names}
_VERSION = re.compile(r"@{1,2}[^@]*$")


def plain_name(name: str, prefix: str = "") -> str:
    """The C name of an import: no symbol version, no __imp_ slot prefix, no platform underscore."""
    out = _VERSION.sub("", name)
    if out.startswith("__imp_"):
        out = out[len("__imp_") :]
    if prefix and out.startswith(prefix):
        out = out[len(prefix) :]
    return out


def purpose_of(name: str) -> str:
    """rea's purpose class of an API name ("other" when it is not a well-known one)."""
    # The C runtimes spell POSIX names with a leading underscore (msvcrt's _fileno, _setmode, _open).
    bare = name.lstrip("_")
    for candidate in (name, name[:-1] if name[-1:] in ("A", "W") else name, bare):
        if candidate in _BY_NAME:
            return _BY_NAME[candidate]
    return next((purpose for prefix, purpose in _PREFIXES if name.startswith(prefix)), "other")


def _import_procedures(call: ToolCall) -> dict[str, str]:
    """The import procedures the provider lists: name (its engine's, before a user name) -> address."""
    found: dict[str, str] = {}
    offset: int | None = 0
    seen = 0
    while offset is not None and seen < MAX_PROCEDURES:
        call.ctx.check("inspect_native_api")
        page = run(call, "list_procedures", {"offset": offset, "limit": PAGE}).normalized
        for p in page["procedures"]:
            if p.get("kind") == "import":
                found.setdefault(p.get("original_name") or p["name"], str(p["address"]))
        seen += len(page["procedures"])
        offset = page["next_offset"]
    return found


def _callers(call: ToolCall, address: str) -> list[ApiCaller]:
    refs = run(call, "xrefs", {"address": address}).normalized["references"]
    procs = sorted({r["from_procedure"] for r in refs if r.get("from_procedure")}, key=lambda a: int(a, 16))
    out = []
    for p in procs:
        info = run(call, "procedure_address", {"procedure": p}).normalized
        sites = sorted({r["from"] for r in refs if r.get("from_procedure") == p}, key=lambda a: int(a, 16))
        out.append(ApiCaller(address=info["address"], name=info["name"], call_sites=sites))
    return out


class _Import(Record):
    """One import as listed (ApiImport's fields, in the order the answer has always said them): what is not known
    for it is left out (UNSET), and ``callers`` is null past max_operations lookups."""

    name: str
    plain_name: str
    purpose: str
    library: str | None
    library_source: str | None
    slot: str | None
    address: str | None
    prototype: str | UnsetType = UNSET
    kind: str | UnsetType = UNSET
    call_sites: list[str] | UnsetType = UNSET
    callers: list[ApiCaller] | UnsetType | None = UNSET


def _inspect_api(call: ToolCall) -> Evidence:
    check_document(call)
    target = call.session.require_target()
    budget = arg_int(call.args, "max_operations", 200)
    prefix = "_" if target.format in ("mach-o", "mach-o-universal") else ""
    lims: list[str] = []
    layout: JSONObject = {}  # the provider's binary_layout answer (its JSON)
    if call.session.supports("binary_layout"):
        layout = run(call, "binary_layout", {}).normalized
    else:
        lims.append("the bound provider offers no binary_layout: libraries of imports are unknown")
    needed = needed_libraries(layout)
    procs = _import_procedures(call)
    listed: list[JSONObject] = objects_in(layout.get("imports")) or [
        {"name": n, "library": None, "slot": None} for n in sorted(procs)
    ]
    scope = None
    asked = arg_str(call.args, "procedure")
    if asked is not None:
        callees = run(call, "procedure_callees", {"procedure": asked}).normalized
        scope = {
            c.get("original_name") or c["name"]: c.get("call_sites", [])
            for c in callees["callees"]
            if c.get("kind") == "import" and c.get("name")
        }
        listed = [i for i in listed if i["name"] in scope]
    inferred = False
    entries = []
    notes = annotate.notebook(call)
    for item in sorted(listed, key=lambda i: (str(i.get("library") or ""), str(i["name"]))):
        name, listed_library, slot = str(item["name"]), item.get("library"), item.get("slot")
        library, source = listed_library if isinstance(listed_library, str) else None, "binary"
        if library is None and len(needed) == 1 and target.format == "elf":
            # An ELF import names no library; with one DT_NEEDED entry it can only come from there.
            library, source, inferred = needed[0], "sole-needed-library", True
        plain = plain_name(name, prefix)
        proc = procs.get(name)
        proto = None if proc is None else notes.note(proc).prototype
        callers: list[ApiCaller] | UnsetType | None = UNSET
        if scope is None and proc is not None and call.session.supports("xrefs"):
            callers = None
            if budget > 0:
                budget -= 1
                try:
                    callers = _callers(call, proc)
                except ReaError as exc:
                    if exc.code not in ("invalid_request",):
                        raise
        entry = _Import(
            name=name,
            plain_name=plain,
            purpose=purpose_of(plain),
            library=library,
            library_source=source if library else None,
            slot=slot if isinstance(slot, str) else None,
            address=proc,
            prototype=UNSET if proto is None else proto,
            # An imported variable (stdin, _ITM_*): its slot is read, never called; no procedure stands for it.
            kind="data" if item.get("kind") == "data" else UNSET,
            call_sites=UNSET if scope is None else scope.get(name, []),
            callers=callers,
        )
        entries.append(entry)
    if inferred:
        lims.append(
            f"ELF imports name no library; they are attributed to the only needed library, {needed[0]} "
            "(library_source sole-needed-library)"
        )
    if any(e.callers is None for e in entries):
        lims.append("callers were looked up for the first max_operations imports only (the rest are null)")
    libraries: dict[str | None, list[_Import]] = {}
    for e in entries:
        libraries.setdefault(e.library, []).append(e)
    purposes: dict[str, list[str]] = {}
    for e in entries:
        purposes.setdefault(e.purpose, []).append(e.plain_name)
    body = {
        "procedure": asked,
        "libraries": [
            {
                "library": lib,
                "import_count": len(items),
                "purposes": sorted({i.purpose for i in items}),
                "imports": items,
            }
            for lib, items in sorted(libraries.items(), key=lambda kv: (kv[0] is None, kv[0] or ""))
        ],
        "purposes": [
            ApiPurpose(
                purpose=p,
                description=PURPOSES[p][0] if p in PURPOSES else "not a well-known API",
                imports=sorted(set(names)),
            )
            for p, names in sorted(purposes.items())
        ],
        "needed": needed,
        "import_count": len(entries),
    }
    call.ctx.finish("inspect_native_api: done")
    return evidence(call, OperationResult(normalized=body, limitations=lims, confidence="derived"))


def tools() -> list[ToolDef]:
    return [
        binary_tool(
            name="inspect_native_api",
            result_type=ApiSurface,
            description=(
                "The imported API surface, grouped by library and by purpose, with each import's callers. "
                "Purposes: console and file I/O, memory, strings, process, threads, network, crypto, ...; with "
                "procedure, only the imports that procedure calls and its call sites."
            ),
            input_schema=obj(
                {
                    "procedure": {
                        **PROCEDURE,
                        "description": "Only the imports this procedure calls (name or address).",
                    },
                    "max_operations": prop(
                        "integer",
                        "Imports whose callers are looked up (0-2000, default 200).",
                        [200],
                        minimum=0,
                        maximum=2000,
                    ),
                    "document": DOCUMENT,
                }
            ),
            handler=_inspect_api,
            requires_operations=("list_procedures",),
            examples=({}, {"procedure": "main"}, {"max_operations": 0}),
        )
    ]

"""Exec shim for owned processes: die with the server, cap the address space, then become the program.

Run as ``python -I -S launch.py PARENT_PID AS_BYTES CTTY -- ARGV...`` (standard library only, so it starts
in milliseconds). A cap set here, before exec, binds every descendant of the program too. ``CTTY`` 1
makes stdin (a pseudo-terminal) the controlling terminal of the new session.
"""

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> bool:
    """Have the kernel SIGKILL this process when ``parent`` (the process that started it) ends; False when it has
    already ended. Linux only (elsewhere True, and the worker's own parent watch is what remains).

    Called in the child, first thing: an owned process through this shim, a local pool's worker in its
    initializer. The signal is sent when the thread that forked us exits, so the parent starts children from a
    thread that lives as long as they should (the kernel's spawner thread; a pool's submitting thread).
    """
    if not sys.platform.startswith("linux"):
        return True
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The parent may have died between fork and prctl; then nobody would ever stop us.
    return os.getppid() == parent


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        sys.stderr.write("usage: launch.py PARENT_PID AS_BYTES CTTY -- ARGV...\n")
        return 125
    parent, limit, ctty, program = int(argv[0]), int(argv[1]), argv[2] == "1", argv[4:]
    if not die_with_parent(parent):
        return 125
    if limit > 0:
        import resource

        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ValueError, OSError) as exc:
            sys.stderr.write(f"rea launch: address-space cap not applied: {exc}\n")
    if ctty:
        import fcntl
        import termios

        try:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        except OSError as exc:
            sys.stderr.write(f"rea launch: no controlling terminal: {exc}\n")
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        sys.stderr.write(f"rea launch: cannot execute {program[0]}: {exc.strerror}\n")
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

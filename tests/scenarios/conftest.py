"""Programs the process-scenario tests drive, compiled with gcc now."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import toolchains

PROGRAMS = {
    # Reads "a b" lines at a prompt, prints their sum and logs it to session.log; "quit" exits with 7.
    "repl": r"""
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    char line[256];
    FILE *log = fopen("session.log", "w");
    printf("tty=%d\n", isatty(0));
    for (;;) {
        printf("calc> "); fflush(stdout);
        if (!fgets(line, sizeof line, stdin)) break;
        int a, b;
        if (strncmp(line, "quit", 4) == 0) { printf("bye\n"); break; }
        if (sscanf(line, "%d %d", &a, &b) == 2) { printf("sum %d\n", a + b); if (log) fprintf(log, "%d\n", a + b); }
        else printf("?\n");
    }
    if (log) fclose(log);
    return 7;
}
""",
    # Forks a child that sleeps, prints its pid, and exits without waiting for it.
    "forker": r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
    pid_t child = fork();
    if (child == 0) { sleep(30); return 0; }
    printf("child %d\n", (int)child); fflush(stdout);
    usleep(300000);
    return 0;
}
""",
    # Ignores SIGTERM and never exits.
    "hang": r"""
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
int main(void) { signal(SIGTERM, SIG_IGN); printf("hanging\n"); fflush(stdout); for (;;) pause(); }
""",
    # Waits for SIGUSR1, reports it and exits with 3.
    "waiter": r"""
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static volatile sig_atomic_t got = 0;
static void on(int s) { got = s; }
int main(void) {
    signal(SIGUSR1, on);
    printf("ready\n"); fflush(stdout);
    while (!got) pause();
    printf("got %d\n", (int)got);
    return 3;
}
""",
}


@pytest.fixture(scope="session")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return toolchains.compile_programs(PROGRAMS, tmp_path_factory.mktemp("scenario-programs"))


@pytest.fixture
def sandboxed() -> str:
    """The sandbox mode tests ask for: required (bubblewrap must work here, as on CI)."""
    toolchains.require("bwrap")
    return "required"

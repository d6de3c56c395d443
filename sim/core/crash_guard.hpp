// What a crash does instead of dying silently (plain C++, POSIX): a fatal signal (SIGSEGV,
// SIGBUS) while the process is near its address-space limit (`ulimit -v`) is memory running
// out where a library does not check for it (SystemC's own allocator dereferences a failed
// malloc): said as that, exit 1. Any other fatal signal is re-raised as it was (a bug: let it
// crash, with a core). Either way the files named beforehand are removed first, so no earlier
// run's outputs are left looking like this run's.
#pragma once

#include <string>
#include <vector>

namespace podsim {

// Installs the handlers (on an alternate stack), and ignores SIGXFSZ and SIGPIPE so that a
// write that cannot be made fails as an error the caller handles. Once, at start.
void install_crash_guard();
// The files to remove if the process crashes from now on (replaces the list; empty: none).
void remove_on_crash(const std::vector<std::string>& paths);

}  // namespace podsim

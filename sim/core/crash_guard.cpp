#include "sim/core/crash_guard.hpp"

#include "sim/core/sanitizers.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>

namespace podsim {

namespace {

// Kept in fixed storage: the handler may touch nothing that allocates.
constexpr std::size_t kMaxFiles = 16, kMaxPath = 4096;
std::array<std::array<char, kMaxPath>, kMaxFiles> g_files{};
volatile sig_atomic_t g_file_count = 0;
std::array<char, 1 << 16> g_alt_stack{};

// Within this much of the address-space limit, a crash is taken for memory running out.
constexpr unsigned long long kMargin = 64ull << 20;

void say(const char* s) {
  const ssize_t ignored = ::write(2, s, std::strlen(s));
  (void)ignored;
}

// The process's virtual size in bytes, from /proc/self/statm (its first field, in pages);
// 0 if it cannot be read.
unsigned long long virtual_size() {
  const int fd = ::open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  char buf[64] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  unsigned long long pages = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i)
    pages = pages * 10 + static_cast<unsigned long long>(buf[i] - '0');
  return pages * static_cast<unsigned long long>(::sysconf(_SC_PAGESIZE));
}

void on_fatal(int sig) {
  for (sig_atomic_t i = 0; i < g_file_count; ++i)
    ::unlink(g_files[static_cast<std::size_t>(i)].data());
  rlimit limit{};
  const bool limited = ::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  if (limited && virtual_size() + kMargin >= limit.rlim_cur) {
    say("podsim: out of host memory (a library crashed on an allocation that failed): this "
        "config needs more than the host (or its memory limit) gives; docs/speed.md, \"Host "
        "memory\", says what a run keeps per GPU\n");
    ::_exit(1);
  }
  ::signal(sig, SIG_DFL);  // a bug: crash as it would have
  ::raise(sig);
}

}  // namespace

void install_crash_guard() {
  // A write past `ulimit -f`, or into a pipe or FIFO whose reader has gone, fails (EFBIG,
  // EPIPE) instead of killing the process: the run then says so and removes what it wrote.
  ::signal(SIGXFSZ, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
#if !PODSIM_ASAN  // AddressSanitizer reports crashes itself (and no run
                  // there is under ulimit -v)
  stack_t st{};
  st.ss_sp = g_alt_stack.data();
  st.ss_size = g_alt_stack.size();
  ::sigaltstack(&st, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_fatal;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGSEGV, &sa, nullptr);
  ::sigaction(SIGBUS, &sa, nullptr);
#else
  (void)&on_fatal;
  (void)g_alt_stack;
#endif
}

void remove_on_crash(const std::vector<std::string>& paths) {
  g_file_count = 0;
  std::size_t n = 0;
  for (const std::string& p : paths) {
    if (n == kMaxFiles || p.size() >= kMaxPath) continue;
    std::memcpy(g_files[n].data(), p.c_str(), p.size() + 1);
    ++n;
  }
  g_file_count = static_cast<sig_atomic_t>(n);
}

}  // namespace podsim

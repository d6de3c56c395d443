#include "sim/tools/process_pool.hpp"

#include "sim/core/huge_pages.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

extern char** environ;

namespace podsim::tools {

namespace {

// A child is a podsim of its own, one rank: it does not inherit the variables an MPI launcher
// gives this process (it would take itself for one of the launcher's ranks). It starts with
// its heap on huge pages where that helps (huge_heap_tunables), instead of starting again.
std::vector<char*> child_environment() {
  static const std::optional<std::string> tunables = [] {
    const auto t = huge_heap_tunables();
    return t ? std::optional<std::string>("GLIBC_TUNABLES=" + *t) : std::nullopt;
  }();
  std::vector<char*> env;
  if (tunables) env.push_back(const_cast<char*>(tunables->c_str()));
  for (char** e = environ; *e; ++e) {
    const std::string_view v(*e);
    if (v.rfind("OMPI_", 0) == 0 || v.rfind("PMIX_", 0) == 0 || v.rfind("PMI_", 0) == 0) continue;
    if (tunables && v.rfind("GLIBC_TUNABLES=", 0) == 0) continue;  // in `tunables` already
    env.push_back(*e);
  }
  env.push_back(nullptr);
  return env;
}

// Starts a child: stdin from /dev/null, stdout and stderr to the job's files. The child dies
// with this process (PR_SET_PDEATHSIG): a sweep rank that is killed leaves no run behind
// writing into its output after the job has ended.
pid_t spawn(const ChildJob& job) {
  const std::string out = job.stdout_path.empty() ? "/dev/null" : job.stdout_path;
  const std::string err = job.stderr_path.empty() ? "/dev/null" : job.stderr_path;
  std::vector<char*> argv;
  for (const auto& a : job.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> env = child_environment();
  const pid_t parent = ::getpid();
  int ready[2];  // the child reports a failed exec (its errno) through this pipe
  if (::pipe2(ready, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot start a child: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(ready[0]);
    ::close(ready[1]);
    throw std::runtime_error("cannot start " + job.argv[0] + ": " + std::strerror(e));
  }
  if (pid == 0) {  // the child: only async-signal-safe calls from here
    ::close(ready[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent is already gone
    const int in = ::open("/dev/null", O_RDONLY);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || o < 0 || e < 0 || ::dup2(in, 0) < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) {
      const int code = errno;
      (void)!::write(ready[1], &code, sizeof code);
      ::_exit(127);
    }
    ::execve(argv[0], argv.data(), env.data());
    const int code = errno;
    (void)!::write(ready[1], &code, sizeof code);
    ::_exit(127);
  }
  ::close(ready[1]);
  int code = 0;
  const auto n = ::read(ready[0], &code, sizeof code);
  ::close(ready[0]);
  if (n == static_cast<ssize_t>(sizeof code)) {
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error("cannot start " + job.argv[0] + ": " + std::strerror(code));
  }
  return pid;
}

}  // namespace

std::vector<ChildResult> run_children(
    const std::vector<ChildJob>& jobs, unsigned parallel,
    const std::function<void(std::size_t, const ChildResult&)>& on_done) {
  if (parallel == 0) parallel = 1;
  std::vector<ChildResult> results(jobs.size());
  std::map<pid_t, std::size_t> running;
  std::size_t next = 0;
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && running.size() < parallel) {
      running[spawn(jobs[next])] = next;
      ++next;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;  // not ours
    ChildResult& r = results[it->second];
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    if (on_done) on_done(it->second, r);
    running.erase(it);
  }
  return results;
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find the podsim executable (/proc/self/exe)");
  return std::string(buf, static_cast<std::size_t>(n));
}

}  // namespace podsim::tools

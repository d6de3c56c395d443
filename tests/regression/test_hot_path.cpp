// The speed guard (what CI checks instead of timing anything): a pod is run in the test's own
// process, and over the middle of its access phase (a quarter to nine tenths of the accesses
// done) the kernel's work and the allocations (calls to operator new, and blocks from the
// huge-page arena, sim/core/huge_pages.hpp) are counted and divided by the remote accesses
// completed. Each must stay within its budget in hot_path_budgets.json; the message
// names the counter that grew.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <new>

#include "sim/core/config_io.hpp"
#include "sim/core/huge_pages.hpp"
#include "sim/kernel/timed_queue.hpp"
#include "sim/pod/pod.hpp"
#include "sim/pod/pod_config_io.hpp"
#include "tests/support/run_podsim.hpp"

#include <execinfo.h>

// Under AddressSanitizer the sanitizer owns operator new: allocations are not counted there
// (the release build, which CI runs, counts them).
#if defined(__SANITIZE_ADDRESS__)
#define PODSIM_COUNT_ALLOCATIONS 0
#else
#define PODSIM_COUNT_ALLOCATIONS 1
#endif

namespace {
[[maybe_unused]] std::uint64_t g_allocations = 0;
// HOT_PATH_TRACE=1: the first allocations inside the window print their stack (resolve the
// addresses with addr2line -f -C -e build/release/tests/hot_path_tests ADDR).
[[maybe_unused]] bool g_trace = false;
[[maybe_unused]] int g_traced = 0;
}  // namespace

#if PODSIM_COUNT_ALLOCATIONS
// Every allocation of this test process is counted.
void* operator new(std::size_t n) {
  ++g_allocations;
  if (g_trace && g_traced < 12) {
    ++g_traced;
    g_trace = false;
    void* stack[12];
    const int depth = backtrace(stack, 12);
    std::fprintf(stderr, "---- allocation of %zu bytes\n", n);
    backtrace_symbols_fd(stack, depth, 2);
    g_trace = true;
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  ++g_allocations;
  const std::size_t al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
#endif

using namespace podsim;
namespace json = boost::json;

namespace {

struct Sample {
  std::uint64_t accesses, serves, activations, notifications, allocations;
};

void check_budget(const std::string& name) {
  const json::value budgets =
      config::ConfigDoc::from_file(test::source_path("tests/regression/hot_path_budgets.json"))
          .root();
  const json::object& c = budgets.at(name).as_object();
  auto doc = c.contains("config") ? config::ConfigDoc::from_file(test::source_path(
                                        "configs/" + std::string(c.at("config").as_string())))
                                  : config::ConfigDoc::from_text("{}", "hot path");
  for (const auto& s : c.at("set").as_array())
    doc.apply_override(std::string(s.as_string()));
  const PodConfig cfg = read_pod_config(doc);
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  Pod pod("pod", cfg);
  const std::uint64_t total = [&] {
    std::uint64_t initiators =
        cfg.workload.initiators.empty() ? cfg.pod.gpus : cfg.workload.initiators.size();
    return initiators * cfg.workload.traffic.accesses;
  }();
  std::vector<Sample> samples;
  pod.run(
      [&] {
        const KernelCounters k = pod.events().counters();
        samples.push_back(Sample{pod.accesses_completed(), k.serves, k.activations, k.notifications,
                                 g_allocations + huge_allocations()});
        g_trace = std::getenv("HOT_PATH_TRACE") && pod.accesses_completed() > total / 3;
      },
      Time::us(1));
  REQUIRE(pod.ok());
  // The window: from the first sample with a quarter of the accesses done to the last with
  // no more than nine tenths.
  const Sample* from = nullptr;
  const Sample* to = nullptr;
  for (const Sample& s : samples) {
    if (!from && s.accesses >= total / 4) from = &s;
    if (s.accesses <= total * 9 / 10) to = &s;
  }
  REQUIRE(from);
  REQUIRE(to);
  REQUIRE(to->accesses > from->accesses + total / 4);
  const double n = static_cast<double>(to->accesses - from->accesses);
  const std::pair<const char*, double> measured[] = {
      {"dispatcher_serves", static_cast<double>(to->serves - from->serves) / n},
      {"kernel_activations", static_cast<double>(to->activations - from->activations) / n},
      {"kernel_notifications", static_cast<double>(to->notifications - from->notifications) / n},
      {"heap_allocations", static_cast<double>(to->allocations - from->allocations) / n},
  };
  std::printf("hot path %s, per remote access:", name.c_str());
  for (const auto& [counter, value] : measured)
    std::printf(" %s %.4f", counter, value);
  std::printf("\n");
  const json::object& budget = c.at("per_remote_access").as_object();
  for (const auto& [counter, value] : measured) {
    if (!PODSIM_COUNT_ALLOCATIONS && std::string(counter) == "heap_allocations") continue;
    const double limit = budget.at(counter).to_number<double>();
    INFO(name << ": " << counter << " per remote access is " << value << ", budget " << limit
              << " (tests/regression/hot_path_budgets.json)");
    CHECK(value <= limit);
  }
  // The window really was the hot path: at least one round trip's serves per access.
  CHECK(measured[0].second >= 8.0);
}

}  // namespace

TEST_CASE("hot path within budget: default pod, closed loop", "[hot_path]") {
  check_budget("default-closed");
}
TEST_CASE("hot path within budget: default pod, Poisson at 50% load", "[hot_path]") {
  check_budget("default-poisson");
}
TEST_CASE("hot path within budget: helios-72, 18 planes", "[hot_path]") {
  check_budget("helios-72");
}

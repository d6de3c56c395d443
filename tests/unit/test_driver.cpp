// The driver model's protocol, with no SystemC: drivers talk through a tiny in-memory world
// that delivers messages after a fixed delay and runs timers.
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <set>

#include "driver_model/driver.hpp"

using namespace podsim;
using namespace podsim::driver;

namespace {

class World;

class FakeEnv final : public DriverEnv {
 public:
  FakeEnv(World& w, AccelId self) : world_(w), self_(self) {}
  Time now() const override { return start_ + spent_; }
  void spend(Time t) override { spent_ += t; }
  std::optional<std::vector<std::uint64_t>> vram_alloc(std::uint64_t pages) override {
    if (pages > vram_free_) return std::nullopt;
    vram_free_ -= pages;
    std::vector<std::uint64_t> out;
    // Scattered: every other page.
    for (std::uint64_t i = 0; i < pages; ++i)
      out.push_back(next_page_ += 2);
    return out;
  }
  void vram_free(std::span<const std::uint64_t> pages) override { vram_free_ += pages.size(); }
  void npa_map(std::uint64_t key, std::uint64_t page) override { npa[key] = page; }
  void npa_unmap(std::uint64_t key) override { npa.erase(key); }
  void npa_flush_tlb() override { ++npa_flushes; }
  void gpuvm_map(std::uint16_t, std::uint64_t va_page, const Pte& pte) override {
    gpuvm[va_page] = pte;
  }
  void gpuvm_unmap(std::uint16_t, std::uint64_t va_page) override { gpuvm.erase(va_page); }
  void gpuvm_flush_tlb(std::uint16_t) override { ++gpuvm_flushes; }
  bool send(AccelId dst, const Dwords& m) override;
  void start_timer(std::uint64_t token, Time delay) override;

  void begin(Time t) {
    start_ = std::max(t, busy_until_);
    spent_ = Time{};
  }
  void end() { busy_until_ = start_ + spent_; }

  std::map<std::uint64_t, std::uint64_t> npa;
  std::map<std::uint64_t, Pte> gpuvm;
  int npa_flushes = 0, gpuvm_flushes = 0;
  std::uint64_t vram_free_ = 1 << 20;
  bool drop_outgoing = false;  // a dead peer: its messages never arrive

 private:
  World& world_;
  AccelId self_;
  Time start_, spent_, busy_until_;
  std::uint64_t next_page_ = 100;
};

class World {
 public:
  static constexpr Time kWire = Time::us(3);  // message delivery time

  explicit World(int n, NpaAddrMode mode = NpaAddrMode::SourceAliasing, std::uint64_t seed = 1) {
    DriverConfig cfg;
    for (int i = 0; i < n; ++i) {
      envs.push_back(std::make_unique<FakeEnv>(*this, static_cast<AccelId>(i)));
      drivers.push_back(std::make_unique<Driver>(cfg, static_cast<AccelId>(i), mode,
                                                 Rng::for_component(seed, "d" + std::to_string(i)),
                                                 *envs.back()));
    }
  }
  // Runs `fn` as an operation of driver `i` at the current time.
  template <class Fn>
  auto op(int i, Fn fn) {
    envs[i]->begin(now);
    auto r = fn(*drivers[i]);
    envs[i]->end();
    return r;
  }
  void at(Time t, std::function<void()> fn) { events.push({t, seq++, std::move(fn)}); }
  // Runs events until none are left or `limit` is reached.
  void run(Time limit = Time::ms(100'000)) {
    while (!events.empty() && events.top().t <= limit) {
      Event e = events.top();
      events.pop();
      now = e.t;
      e.fn();
    }
  }
  Result<Fd> import(int i, const UalinkHandle& h) {
    auto result = std::make_shared<Result<Fd>>(Result<Fd>{Errno::Fault, -2});
    envs[i]->begin(now);
    drivers[i]->import_handle(h, [result](Result<Fd> r) { *result = r; });
    envs[i]->end();
    run();
    return *result;
  }

  std::vector<std::unique_ptr<FakeEnv>> envs;
  std::vector<std::unique_ptr<Driver>> drivers;
  Time now;
  std::uint64_t messages = 0;

 private:
  struct Event {
    Time t;
    std::uint64_t seq;
    std::function<void()> fn;
    bool operator<(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  std::priority_queue<Event> events;
  std::uint64_t seq = 0;
};

bool FakeEnv::send(AccelId dst, const Dwords& m) {
  if (drop_outgoing) return true;
  ++world_.messages;
  AccelId from = self_;
  World& w = world_;
  w.at(now() + World::kWire, [&w, dst, from, m] {
    w.envs[dst]->begin(w.now);
    w.drivers[dst]->on_message(from, m);
    w.envs[dst]->end();
  });
  return true;
}

void FakeEnv::start_timer(std::uint64_t token, Time delay) {
  World& w = world_;
  AccelId self = self_;
  w.at(now() + delay, [&w, self, token] {
    w.envs[self]->begin(w.now);
    w.drivers[self]->on_timer(token);
    w.envs[self]->end();
  });
}

GemHandle vram_buffer(World& w, int i, std::uint64_t bytes = 1 << 20) {
  auto g = w.op(i, [&](Driver& d) { return d.gem_create(Bytes(bytes), Domain::Vram); });
  REQUIRE(g.ok());
  return g.value;
}

UalinkHandle exported(World& w, int i, std::uint64_t bytes = 1 << 20) {
  GemHandle g = vram_buffer(w, i, bytes);
  auto h = w.op(i, [&](Driver& d) { return d.export_handle(g); });
  REQUIRE(h.ok());
  return h.value;
}

}  // namespace

TEST_CASE("export: errors for a missing buffer, a non-VRAM buffer and an inactive link",
          "[driver][export]") {
  World w(2);
  CHECK(w.op(0, [](Driver& d) { return d.export_handle(42); }).err == Errno::NoEnt);
  auto gtt = w.op(0, [](Driver& d) { return d.gem_create(Bytes(4096), Domain::Gtt); });
  REQUIRE(gtt.ok());
  CHECK(w.op(0, [&](Driver& d) { return d.export_handle(gtt.value); }).err == Errno::OpNotSupp);
  GemHandle g = vram_buffer(w, 0);
  w.drivers[0]->set_ualink_active(false);
  CHECK(w.op(0, [&](Driver& d) { return d.export_handle(g); }).err == Errno::OpNotSupp);
  // User mode cannot allocate in the NPA domain.
  CHECK(w.op(0, [](Driver& d) { return d.gem_create(Bytes(4096), Domain::Npa); }).err ==
        Errno::Inval);
}

TEST_CASE("export is idempotent: the same buffer always gives the same handle",
          "[driver][export]") {
  World w(4);
  GemHandle g = vram_buffer(w, 3);
  auto h1 = w.op(3, [&](Driver& d) { return d.export_handle(g); });
  auto h2 = w.op(3, [&](Driver& d) { return d.export_handle(g); });
  REQUIRE(h1.ok());
  CHECK(h1.value == h2.value);
  CHECK(w.drivers[3]->exports() == 1);
  // A second GEM handle to the same buffer (via a dma-buf) exports to the same handle too.
  UalinkHandle other = exported(w, 3);
  CHECK_FALSE(other == h1.value);
}

TEST_CASE("handles: 128 bits, low 10 bits the exporter's ID, never 0, unique, seeded",
          "[driver][export]") {
  World w(600);
  std::set<std::uint64_t> los;
  for (int i = 0; i < 50; ++i) {
    UalinkHandle h = exported(w, 517, 4096);
    CHECK(h.exporter() == 517);
    CHECK((h.lo & 0x3FF) == 517);
    CHECK(h.lo != 0);
    CHECK(los.insert(h.lo).second);
  }
  World same(2, NpaAddrMode::SourceAliasing, 1), other(2, NpaAddrMode::SourceAliasing, 2);
  World again(2, NpaAddrMode::SourceAliasing, 1);
  CHECK(exported(same, 1) == exported(again, 1));
  CHECK_FALSE(exported(same, 1) == exported(other, 1));
}

TEST_CASE("import: HELLO handshake, NPA_REQ, NPA_RSP, and a buffer in the NPA domain",
          "[driver][import]") {
  World w(2);
  UalinkHandle h = exported(w, 1);
  CHECK(w.drivers[0]->connection(1) == ConnState::NotReady);
  auto fd = w.import(0, h);
  REQUIRE(fd.ok());
  CHECK(w.drivers[0]->connection(1) == ConnState::Established);
  CHECK(w.drivers[1]->connection(0) == ConnState::Established);
  CHECK(w.drivers[0]->generation(1) == 1);
  CHECK(w.messages == 4);  // HELLO, HELLO_ACK, NPA_REQ, NPA_RSP

  // The exporter pinned the buffer once and mapped its scattered pages onto one NPA range.
  CHECK(w.drivers[1]->importer_count(h) == 1);
  const auto& npa = w.envs[1]->npa;
  REQUIRE(npa.size() == 256);
  const std::uint64_t first = npa.begin()->first;
  CHECK(first == 512);  // after the ring pages
  std::uint64_t prev_key = first - 1;
  for (const auto& [key, page] : npa) {
    CHECK(key == prev_key + 1);  // contiguous NPA ...
    prev_key = key;
  }
  CHECK(std::next(npa.begin())->second - npa.begin()->second == 2);  // ... scattered VRAM
  CHECK(w.envs[1]->npa_flushes == 1);

  // The importer maps it like any buffer; its PTEs point at NPAs in the exporter's window.
  auto gem = w.op(0, [&](Driver& d) { return d.gem_from_fd(fd.value); });
  REQUIRE(gem.ok());
  CHECK(w.op(0, [&](Driver& d) { return d.gem_va_map(gem.value, 0x1000'0000, 0); }) == Errno::Ok);
  const auto& ptes = w.envs[0]->gpuvm;
  REQUIRE(ptes.size() == 256);
  const Pte& p0 = ptes.at(0x1000'0000 >> 12);
  CHECK(p0.target == PteTarget::Npa);
  CHECK((p0.frame >> kNpaWindowPageBits) == 1);     // exporter ID in bits 38:29
  CHECK((p0.frame & kNpaWindowPageMask) == first);  // the exporter's NPA page
  CHECK(w.op(0, [&](Driver& d) { return d.gem_cpu_map(gem.value); }) == Errno::Inval);
}

TEST_CASE("a repeated import returns a new reference to the same buffer, with no messages",
          "[driver][import]") {
  World w(2);
  UalinkHandle h = exported(w, 1);
  auto fd1 = w.import(0, h);
  REQUIRE(fd1.ok());
  const auto sent = w.messages;
  auto fd2 = w.import(0, h);
  REQUIRE(fd2.ok());
  CHECK(fd2.value != fd1.value);
  CHECK(w.messages == sent);
  CHECK(w.drivers[0]->imports() == 1);
  // Both fds lead to the same NPA range.
  auto g1 = w.op(0, [&](Driver& d) { return d.gem_from_fd(fd1.value); });
  auto g2 = w.op(0, [&](Driver& d) { return d.gem_from_fd(fd2.value); });
  w.op(0, [&](Driver& d) { return d.gem_va_map(g1.value, 0x1000'0000, 0); });
  w.op(0, [&](Driver& d) { return d.gem_va_map(g2.value, 0x2000'0000, 0); });
  CHECK(w.envs[0]->gpuvm.at(0x1000'0000 >> 12).frame ==
        w.envs[0]->gpuvm.at(0x2000'0000 >> 12).frame);
  CHECK(w.op(0, [&](Driver& d) { return d.close_fd(fd1.value); }) == Errno::Ok);
  CHECK(w.op(0, [&](Driver& d) { return d.close_fd(fd1.value); }) == Errno::Inval);
}

TEST_CASE("a concurrent import of the same handle gets EAGAIN", "[driver][import]") {
  World w(2);
  UalinkHandle h = exported(w, 1);
  Result<Fd> first{Errno::Fault, -2}, second{Errno::Fault, -2};
  w.op(0, [&](Driver& d) {
    d.import_handle(h, [&](Result<Fd> r) { first = r; });
    d.import_handle(h, [&](Result<Fd> r) { second = r; });
    return 0;
  });
  w.run();
  CHECK(first.ok());
  CHECK(second.err == Errno::Again);
}

TEST_CASE("alias mode: importers share one NPA range; each request pins again",
          "[driver][import]") {
  World w(3);
  GemHandle g = vram_buffer(w, 2);
  UalinkHandle h = w.op(2, [&](Driver& d) { return d.export_handle(g); }).value;
  REQUIRE(w.import(0, h).ok());
  REQUIRE(w.import(1, h).ok());
  CHECK(w.drivers[2]->importer_count(h) == 2);
  CHECK(w.drivers[2]->pin_count(g) == 2);
  CHECK(w.envs[2]->npa.size() == 256);  // one range
}

TEST_CASE("ident mode: each importer gets its own range in its own window", "[driver][import]") {
  World w(3, NpaAddrMode::SourceIdentification);
  UalinkHandle h = exported(w, 2);
  REQUIRE(w.import(0, h).ok());
  REQUIRE(w.import(1, h).ok());
  const auto& npa = w.envs[2]->npa;
  CHECK(npa.size() == 512);
  CHECK(npa.count((0ull << 29) | 512) == 1);
  CHECK(npa.count((1ull << 29) | 512) == 1);
}

TEST_CASE("a wrong hi half is refused by the exporter: EINVAL", "[driver][import]") {
  World w(2);
  UalinkHandle h = exported(w, 1);
  h.hi ^= 1;
  CHECK(w.import(0, h).err == Errno::Inval);
  CHECK(w.drivers[0]->imports() == 0);
  CHECK(w.drivers[1]->importer_count(h) == 0);
}

TEST_CASE("an exporter that never answers: ETIMEDOUT after 5 s and the connection is reset",
          "[driver][import]") {
  World w(2);
  UalinkHandle h = exported(w, 1);
  REQUIRE(w.import(0, exported(w, 1)).ok());  // establishes the connection
  w.envs[1]->drop_outgoing = true;            // then the exporter goes silent
  const Time t0 = w.now;
  auto r = w.import(0, h);
  CHECK(r.err == Errno::TimedOut);
  CHECK(w.now - t0 >= Time::ms(5000));
  CHECK(w.drivers[0]->connection(1) == ConnState::NotReady);
  CHECK(w.drivers[0]->imports() == 1);  // only the first import remains
}

TEST_CASE("an import from an accelerator ID beyond accel_max is EINVAL", "[driver][import]") {
  World w(2);
  UalinkHandle h{(0xABCDull << 10) | 300, 7};
  CHECK(w.import(0, h).err == Errno::Inval);
}

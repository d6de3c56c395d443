// In-process pod scenarios. Each test case runs in its own process (SystemC elaborates once).
#include <catch2/catch.hpp>
#include <cstring>
#include <set>

#include "tests/support/in_process_pod.hpp"

using namespace podsim;
using podsim::test::config_with;
using podsim::test::counter;
using podsim::test::kLocalVa;

namespace {}  // namespace

TEST_CASE("one remote load goes through every module and back", "[sc][pod]") {
  Pod pod("pod", config_with({"pod.gpus=2", "workload.initiators=[0]",
                              "workload.traffic.accesses=1", "workload.traffic.read_fraction=1"}));
  pod.run();
  REQUIRE(pod.ok());
  CHECK(pod.summary().remote_accesses() == 1);
  CHECK(pod.summary().remote_reads() == 1);
  CHECK(pod.summary().faults() == 0);

  // Every hop of the path took part, in both directions.
  const Breakdown& b = pod.summary().remote_breakdown();
  std::set<std::string> seen;
  for (std::size_t i = 0; i < b.part_count(); ++i)
    if (b.part_sum(i) > 0) seen.insert(b.part_name(i));
  CHECK(seen == std::set<std::string>{"req.issue", "req.gpuvm", "req.port_tx", "req.link",
                                      "req.switch", "req.port_rx", "req.npa_mmu", "req.vram",
                                      "resp.port_tx", "resp.link", "resp.switch", "resp.port_rx"});
  // The parts add up to the latency.
  double sum = 0;
  for (std::size_t i = 0; i < b.part_count(); ++i)
    sum += b.part_mean(i);
  CHECK(sum == Approx(pod.summary().remote_latency().reported(
                   pod.summary().remote_latency().histogram().mean())));

  // The exporter's NPA MMU translated it and its VRAM served it; everything else they did was
  // the control path's writes into the rings' pages.
  GpuNode& exporter = pod.gpu(1);
  const auto control = counter(exporter.mailbox.stat_group(), "writes_landed");
  CHECK(control > 0);
  CHECK(counter(exporter.npa_mmu.stat_group(), "translations") == 1 + control);
  CHECK(counter(exporter.vram.stat_group(), "reads") == 1);
  CHECK(counter(exporter.vram.stat_group(), "writes") == control);
  // And at teardown everything was given back: only the rings' pages are still mapped.
  CHECK(pod.invariants().ok());
  CHECK(exporter.ring_pages() == 4);  // 2 GPUs, source aliasing: 2 pages per GPU
  CHECK(exporter.npa_mmu.mapped_pages() == exporter.ring_pages());
}

TEST_CASE(
    "a buffer's scattered VRAM pages sit behind one contiguous NPA range, and stores land "
    "on the right pages",
    "[sc][pod]") {
  // VRAM handed out page run by page run (not in the default's aligned blocks).
  Pod pod("pod", config_with({"pod.gpus=2", "workload.initiators=[0]", "workload.teardown=false",
                              "gpu.vram.allocation=scattered"}));
  const std::uint64_t bytes = pod.config().workload.buffer_size.count();
  const std::uint64_t pages = bytes / kPageSize;
  // GPU 0 maps its own buffer first, then GPU 1's import at the next 2 MiB boundary. It stores
  // one 64 B block into each page of the import, at a different block in each page.
  const std::uint64_t import_va = kLocalVa + (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  auto block_of = [](std::uint64_t p) { return p % 64; };
  std::vector<TraceEntry> trace;
  for (std::uint64_t p = 0; p < pages; ++p)
    trace.push_back(TraceEntry{Time::ns(static_cast<std::int64_t>(p)), 0, TraceOp::Write,
                               import_va + p * kPageSize + block_of(p) * 64, 64});
  pod.replay(trace);
  pod.run();
  REQUIRE(pod.ok());
  CHECK(pod.summary().remote_writes() == pages);

  GpuNode& importer = pod.gpu(0);
  GpuNode& exporter = pod.gpu(1);
  const PageTable* imp = importer.gpuvm.page_table(1);
  const PageTable* own = exporter.gpuvm.page_table(1);
  REQUIRE(imp != nullptr);
  REQUIRE(own != nullptr);
  const Pte first = imp->lookup(import_va >> kPageShift);
  REQUIRE(first.target == PteTarget::Npa);
  int runs = 1;
  std::set<std::uint64_t> frames;
  for (std::uint64_t p = 0; p < pages; ++p) {
    // The importer sees one contiguous NPA range ...
    const Pte n = imp->lookup((import_va >> kPageShift) + p);
    REQUIRE(n.target == PteTarget::Npa);
    CHECK(n.frame == first.frame + p);
    // ... which the exporter's NPA MMU maps onto the buffer's own VRAM pages, in order.
    const Pte v = own->lookup((kLocalVa >> kPageShift) + p);
    REQUIRE(v.target == PteTarget::Vram);
    const Pte behind = exporter.npa_mmu.page_table().lookup(
        exporter.npa_mmu.key_of(n.frame << kPageShift, importer.id()));
    REQUIRE(behind.target == PteTarget::Vram);
    CHECK(behind.frame == v.frame);
    frames.insert(v.frame);
    if (p > 0) runs += v.frame != own->lookup((kLocalVa >> kPageShift) + p - 1).frame + 1;
  }
  // The VRAM pages are scattered: many separate runs, spread far apart.
  CHECK(frames.size() == pages);
  CHECK(runs >= static_cast<int>(pages / 32));
  CHECK(*frames.rbegin() - *frames.begin() > 10 * pages);

  // Exactly the blocks stored to hold data, each GPU 0's store (its ID in bits 63:48, the
  // access number below, the same 8 bytes repeated); every other block is still zero.
  std::set<std::uint64_t> ids;
  for (std::uint64_t p = 0; p < pages; ++p) {
    const std::uint64_t frame = own->lookup((kLocalVa >> kPageShift) + p).frame;
    for (std::uint64_t b = 0; b < 64; ++b) {
      unsigned char block[64];
      exporter.vram.read_bytes((frame << kPageShift) + b * 64, block, 64);
      std::uint64_t word;
      std::memcpy(&word, block, 8);
      if (b != block_of(p)) {
        CHECK(word == 0);
        continue;
      }
      CHECK((word >> 48) == 0);
      ids.insert(word & 0xFFFF'FFFF'FFFFull);
      for (int k = 1; k < 8; ++k)
        CHECK(std::memcmp(block, block + 8 * k, 8) == 0);
    }
  }
  CHECK(ids.size() == pages);  // every store, each in its own place
  CHECK(*ids.begin() == 1);
  CHECK(*ids.rbegin() == pages);
}

TEST_CASE(
    "an exporter that moves its pages (unpinned) moves their data: stores before a move are "
    "there after it, behind the NPA range and the owner's own mapping",
    "[sc][pod][migration]") {
  // GPU 0 stores once into every page of GPU 1's buffer, then waits while GPU 1 moves a page
  // every 2 us on average; a last load at 300 us keeps the run going. Every page moved after
  // its store must hold it in its new place.
  Pod pod("pod", config_with({"pod.gpus=2", "workload.initiators=[0]", "workload.teardown=false",
                              "gpu.driver.exported_memory=unpinned",
                              "gpu.driver.migration.eviction_interval=2us"}));
  const std::uint64_t bytes = pod.config().workload.buffer_size.count();
  const std::uint64_t pages = bytes / kPageSize;
  const std::uint64_t import_va = kLocalVa + (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  std::vector<TraceEntry> trace;
  for (std::uint64_t p = 0; p < pages; ++p)
    trace.push_back(TraceEntry{Time::ns(static_cast<std::int64_t>(10 * p)), 0, TraceOp::Write,
                               import_va + p * kPageSize, 64});
  trace.push_back(TraceEntry{Time::us(300), 0, TraceOp::Read, import_va, 64});
  pod.replay(trace);
  pod.run();
  REQUIRE(pod.ok());
  GpuNode& importer = pod.gpu(0);
  GpuNode& exporter = pod.gpu(1);
  REQUIRE(counter(exporter.driver.driver().stats(), "evictions") > 5);
  const PageTable* imp = importer.gpuvm.page_table(1);
  const PageTable* own = exporter.gpuvm.page_table(1);
  REQUIRE(imp != nullptr);
  REQUIRE(own != nullptr);
  std::uint64_t stored = 0;
  for (std::uint64_t p = 0; p < pages; ++p) {
    const Pte n = imp->lookup((import_va >> kPageShift) + p);
    REQUIRE(n.target == PteTarget::Npa);
    const Pte behind = exporter.npa_mmu.page_table().lookup(
        exporter.npa_mmu.key_of(n.frame << kPageShift, importer.id()));
    REQUIRE(behind.target == PteTarget::Vram);
    // The owner's own mapping of the page is the same VRAM page.
    CHECK(own->lookup((kLocalVa >> kPageShift) + p).frame == behind.frame);
    std::uint64_t word = 0;
    exporter.vram.read_bytes(behind.frame << kPageShift, reinterpret_cast<unsigned char*>(&word),
                             8);
    stored += word != 0;
  }
  CHECK(stored == pages);  // every store survived the moves
}

TEST_CASE("the default pod: every GPU loads from and stores to every other", "[sc][pod]") {
  Pod pod("pod", config_with({"workload.traffic.accesses=400", "workload.teardown=false"}));
  pod.run();
  REQUIRE(pod.ok());
  CHECK(pod.summary().remote_accesses() == 8 * 400);
  CHECK(pod.summary().faults() == 0);
  for (std::size_t g = 0; g < pod.gpu_count(); ++g) {
    GpuNode& n = pod.gpu(g);
    CHECK(n.agent.completed() == 400);
    CHECK(n.npa_mmu.mapped_pages() == 256 + n.ring_pages());
    CHECK(n.driver.driver().imports() == 7);
    CHECK(n.driver.driver().exports() == 1);
    for (AccelId peer = 0; peer < 8; ++peer)
      if (peer != g) CHECK(n.driver.driver().connection(peer) == driver::ConnState::Established);
  }
}

namespace {
// Every address a sender's control path writes at a receiver (ring slots of both rings,
// write pointers) and a receiver's firmware writes back at a sender (write-backs) is, as the
// receiving GPU's NPA MMU reads it, a page that GPU mapped for the rings, on VRAM of its own
// that no exported range uses; and each peer's write pointers and write-backs have bytes of
// their own (in source identification the write-back address has no per-peer offset, B2's
// second half as the snapshot has it: harmless, since each peer's land in a page of its own).
void ring_addresses_mapped(const char* mode) {
  Pod pod("pod", config_with({"pod.gpus=4", std::string("pod.addr_mode=") + mode,
                              "workload.traffic.accesses=10", "workload.teardown=false"}));
  pod.run();
  REQUIRE(pod.ok());
  const NpaAddrMode m = std::string(mode) == "source_identification"
                            ? NpaAddrMode::SourceIdentification
                            : NpaAddrMode::SourceAliasing;
  std::set<std::uint64_t> keys_seen;
  for (AccelId r = 0; r < 4; ++r) {
    GpuNode& at = pod.gpu(r);
    std::set<std::uint64_t> ring_frames;
    std::set<std::pair<std::uint64_t, std::uint64_t>> pointer_bytes;  // (frame, offset)
    for (AccelId s = 0; s < 4; ++s) {
      if (s == r) continue;
      std::vector<std::uint64_t> npas;
      for (unsigned ring = 0; ring < 2; ++ring) {
        for (std::uint32_t slot : {0u, 63u})
          npas.push_back(ring_slot_npa(m, r, s, ring, slot));
        npas.push_back(pointer_npa(m, r, s, ring, false));  // s's write pointer at r
        npas.push_back(pointer_npa(m, r, s, ring, true));   // s's firmware's write-back at r
      }
      for (std::uint64_t npa : npas) {
        INFO("gpu" << r << " from gpu" << s << " NPA " << std::hex << npa);
        CHECK(npa_accel(npa) == r);  // routed to r
        const Pte pte = at.npa_mmu.page_table().lookup(at.npa_mmu.key_of(npa, s));
        REQUIRE(pte.valid());
        CHECK(pte.tag == 0);  // no export's
        ring_frames.insert(pte.frame);
      }
      for (unsigned ring = 0; ring < 2; ++ring)
        for (const bool wb : {false, true}) {
          const std::uint64_t npa = pointer_npa(m, r, s, ring, wb);
          const Pte pte = at.npa_mmu.page_table().lookup(at.npa_mmu.key_of(npa, s));
          INFO("gpu" << r << " from gpu" << s << " ring " << ring << " write-back " << wb);
          CHECK(pointer_bytes.insert({pte.frame, npa & 0xFFF}).second);  // no one else's
        }
    }
    CHECK(ring_frames.size() <= at.ring_pages());
    // No exported range maps a ring page's frame or sits on a ring page.
    at.npa_mmu.page_table().for_each([&](std::uint64_t, const Pte& p) {
      if (p.tag != 0) CHECK(ring_frames.count(p.frame) == 0);
    });
    CHECK(at.npa_mmu.mapped_pages() > at.ring_pages());  // the exports are there too
  }
}
}  // namespace

TEST_CASE("the rings' addresses land on the pages the receivers mapped for them, source aliasing",
          "[sc][pod][mailbox]") {
  ring_addresses_mapped("source_aliasing");
}

TEST_CASE(
    "the rings' addresses land on the pages the receivers mapped for them, source "
    "identification",
    "[sc][pod][mailbox]") {
  ring_addresses_mapped("source_identification");
}

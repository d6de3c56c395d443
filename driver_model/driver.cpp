#include "driver_model/driver.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace podsim::driver {

std::string_view conn_state_name(ConnState s) {
  switch (s) {
    case ConnState::NotReady: return "NOT_READY";
    case ConnState::InProgress: return "IN_PROGRESS";
    case ConnState::Pending: return "PENDING";
    case ConnState::Established: return "ESTABLISHED";
  }
  return "?";
}

Driver::Driver(const DriverConfig& cfg, AccelId self, VpodInfo vpod, NpaAddrMode mode, Rng rng,
               DriverEnv& env)
    : cfg_(cfg),
      bugs_(cfg.bugs()),
      self_(self),
      vpod_(std::move(vpod)),
      mode_(mode),
      rng_(rng),
      env_(env),
      exports_(kMaxAccels, mode),
      conns_(kMaxAccels) {
  home_ppod_ = PpodInfo{self_, cfg_.accel_max};
  ppod_ = home_ppod_;
  for (std::size_t t = 1; t < kMsgTypes; ++t) {
    std::string n(msg_name(static_cast<MsgType>(t)));
    sent_by_type_.push_back(std::make_unique<Counter>(stats_, "sent." + n, "count",
                                                      "protocol messages of this type sent"));
    received_by_type_.push_back(std::make_unique<Counter>(
        stats_, "received." + n, "count", "protocol messages of this type received"));
  }
  own_host_->add(*this);
  start_workers();
}

// The host's calls under way go first: they may wait on this driver's queues and sleep on its
// scheduler.
Driver::~Driver() {
  host_->stop();
}

// The IRQ worker handles protocol messages one at a time, in arrival order; the cleanup worker
// runs revokes, one at a time; the unpinned design adds the eviction worker.
void Driver::start_workers() {
  runner_.run(
      serve(irq_queue_, env_, [this](Interrupt i) { return handle(i.from, std::move(i.dw)); }));
  runner_.run(
      serve(cleanup_queue_, env_, [this](ExportPtr node) { return cleanup(std::move(node)); }));
  if (cfg_.exported_memory == ExportedMemory::Unpinned) runner_.run(eviction_worker());
}

std::size_t Driver::workers() const {
  return cfg_.exported_memory == ExportedMemory::Unpinned ? 3 : 2;
}

std::uint64_t Driver::messages_sent(MsgType t) const {
  return sent_by_type_[static_cast<std::size_t>(t) - 1]->value();
}

// ---- buffers and handles -----------------------------------------------------------------------

std::uint64_t Driver::new_bo(Domain d, std::uint64_t pages) {
  std::uint64_t id = next_bo_++;
  Bo& bo = bos_[id];
  bo.id = id;
  bo.domain = d;
  bo.pages = pages;
  return id;
}

GemHandle Driver::new_gem(ProcessId p, std::uint64_t bo) {
  Process& proc = process(p);
  GemHandle g = proc.next_gem++;
  proc.gems[g] = bo;
  Bo& b = bos_.at(bo);
  ++b.refs;
  ++b.handle_count;
  return g;
}

Fd Driver::new_fd(ProcessId p, std::uint64_t bo) {
  Process& proc = process(p);
  Fd fd = proc.next_fd++;
  proc.fds[fd] = bo;
  ++bos_.at(bo).refs;
  return fd;
}

void Driver::unref(std::uint64_t id) {
  auto it = bos_.find(id);
  if (it == bos_.end()) throw std::logic_error("driver: unref of a freed buffer object");
  Bo& bo = it->second;
  if (--bo.refs > 0) return;
  if (bo.pins > 0) {
    // A bug's consequence (B1 leaves a reset importer's pins behind): reported, and the pages
    // go back unpinned, as the kernel would free them, so the run goes on to show what follows.
    env_.note_violation(
        fmt::format("gpu{}: {} freed while pinned {} time(s)", self_, describe(bo), bo.pins));
    for (; bo.pins > 0; --bo.pins)
      env_.vram_unpin(bo.vram_pages);
  }
  if (bo.domain == Domain::Vram) env_.vram_free(bo.vram_pages);
  bos_.erase(it);
}

void Driver::drop_handle(std::uint64_t id) {
  Bo& bo = bos_.at(id);
  // drm_gem: the handle count reaching 0 revokes the export.
  if (--bo.handle_count == 0 && bo.ualink) revoke(bo);
  unref(id);
}

Driver::Bo* Driver::bo_of(ProcessId p, GemHandle gem) {
  auto pit = processes_.find(p);
  if (pit == processes_.end()) return nullptr;
  auto it = pit->second.gems.find(gem);
  if (it == pit->second.gems.end()) return nullptr;
  return &bos_.at(it->second);
}

std::string Driver::describe(const Bo& bo) const {
  std::string what = bo.domain == Domain::Npa ? "NPA buffer" : "VRAM buffer";
  if (bo.ualink) return fmt::format("{} {} (handle {:016x})", what, bo.id, bo.ualink->lo);
  return fmt::format("{} {}", what, bo.id);
}

Task<Result<GemHandle>> Driver::gem_create(ProcessId p, Bytes bytes, Domain domain) {
  co_await sleep(cfg_.ioctl_latency);
  if (domain == Domain::Npa || bytes.count() == 0) co_return Result<GemHandle>{Errno::Inval, 0};
  const std::uint64_t pages = (bytes.count() + kPageSize - 1) / kPageSize;
  std::vector<std::uint64_t> vram;
  if (domain == Domain::Vram) {
    auto got = co_await env_.vram_alloc(pages);  // may wait for freed pages to be cleared
    if (!got) co_return Result<GemHandle>{Errno::NoMem, 0};
    vram = std::move(*got);
  }
  co_return Result<GemHandle>{Errno::Ok, create_gem(p, domain, pages, std::move(vram))};
}

GemHandle Driver::create_gem(ProcessId p, Domain domain, std::uint64_t pages,
                             std::vector<std::uint64_t> vram) {
  const std::uint64_t id = new_bo(domain, pages);
  bos_[id].vram_pages = std::move(vram);
  return new_gem(p, id);
}

Task<Errno> Driver::gem_close(ProcessId p, GemHandle gem) {
  co_await sleep(cfg_.ioctl_latency);
  Process& proc = process(p);
  auto it = proc.gems.find(gem);
  if (it == proc.gems.end()) co_return Errno::NoEnt;
  const std::uint64_t id = it->second;
  proc.gems.erase(it);
  drop_handle(id);
  co_return Errno::Ok;
}

Task<Errno> Driver::gem_cpu_map(ProcessId p, GemHandle gem) {
  co_await sleep(cfg_.ioctl_latency);
  Bo* bo = bo_of(p, gem);
  if (!bo) co_return Errno::NoEnt;
  if (bo->domain == Domain::Npa) co_return Errno::Inval;  // remote memory: GPU access only
  co_return Errno::Ok;
}

Task<Errno> Driver::gem_va_map(ProcessId p, GemHandle gem, std::uint64_t va) {
  co_await sleep(cfg_.ioctl_latency);
  const Errno e = map_va(p, gem, va);
  if (e != Errno::Ok) co_return e;
  const std::uint64_t pages = bo_of(p, gem)->pages;
  co_await sleep(cfg_.pte_update_latency * static_cast<std::int64_t>(pages));
  co_await sleep(env_.gpuvm_flush_tlb(p, va >> kPageShift, pages, FlushKind::Lightweight));
  co_return Errno::Ok;
}

Errno Driver::map_va(ProcessId p, GemHandle gem, std::uint64_t va) {
  Bo* bo = bo_of(p, gem);
  if (!bo) return Errno::NoEnt;
  if (va % kPageSize != 0) return Errno::Inval;
  if (bo->domain == Domain::Gtt) return Errno::OpNotSupp;  // system memory is not modelled
  if (bo->evicted) return Errno::Inval;                    // its access was revoked
  const std::uint64_t pages = bo->pages;
  const std::uint64_t first = va >> kPageShift;
  const bool vram = bo->domain == Domain::Vram;
  // Where pages are contiguous and aligned in both spaces, PTEs carry a 64 KiB or 2 MiB
  // fragment so that one TLB entry covers them.
  Pte proto;
  proto.writable = true;
  proto.target = vram ? PteTarget::Vram : PteTarget::Npa;
  proto.frame = vram ? 0 : bo->npa_page;
  proto.tag = vram ? 0 : bo->grant;
  proto.fragment = cfg_.max_fragment_log2();
  env_.gpuvm_map(
      p, first, pages, proto,
      vram ? std::span<const std::uint64_t>(bo->vram_pages) : std::span<const std::uint64_t>());
  bo->mappings.push_back({p, va});
  ++bo->refs;  // the mapping (bo_va) holds the buffer
  return Errno::Ok;
}

Task<Errno> Driver::gem_va_unmap(ProcessId p, GemHandle gem, std::uint64_t va) {
  co_await sleep(cfg_.ioctl_latency);
  Bo* bo = bo_of(p, gem);
  if (!bo) co_return Errno::NoEnt;
  auto it = std::find_if(bo->mappings.begin(), bo->mappings.end(),
                         [&](const Mapping& m) { return m.process == p && m.va == va; });
  if (it == bo->mappings.end()) co_return Errno::Inval;
  bo->mappings.erase(it);
  const std::uint64_t id = bo->id, pages = bo->pages;
  if (!bo->evicted) env_.gpuvm_unmap(p, va >> kPageShift, pages);
  const Time flush = env_.gpuvm_flush_tlb(p, va >> kPageShift, pages, FlushKind::Heavyweight);
  unref(id);
  co_await sleep(cfg_.pte_update_latency * static_cast<std::int64_t>(pages) + flush);
  co_return Errno::Ok;
}

std::uint32_t Driver::pin_count(ProcessId p, GemHandle gem) const {
  auto pit = processes_.find(p);
  if (pit == processes_.end()) return 0;
  auto it = pit->second.gems.find(gem);
  if (it == pit->second.gems.end()) return 0;
  return bos_.at(it->second).pins;
}

Bytes Driver::gem_size(ProcessId p, GemHandle gem) const {
  auto pit = processes_.find(p);
  if (pit == processes_.end()) return Bytes(0);
  auto it = pit->second.gems.find(gem);
  if (it == pit->second.gems.end()) return Bytes(0);
  return Bytes(bos_.at(it->second).pages * kPageSize);
}

Task<Result<GemHandle>> Driver::prime_fd_to_handle(ProcessId p, Fd fd) {
  co_await sleep(cfg_.ioctl_latency);
  co_return gem_of_fd(p, fd);
}

Task<Result<Fd>> Driver::prime_handle_to_fd(ProcessId p, GemHandle gem) {
  co_await sleep(cfg_.ioctl_latency);
  Process& proc = process(p);
  auto it = proc.gems.find(gem);
  if (it == proc.gems.end()) co_return Result<Fd>{Errno::NoEnt, 0};
  co_return Result<Fd>{Errno::Ok, new_fd(p, it->second)};
}

Result<Fd> Driver::pass_fd(ProcessId from, Fd fd, ProcessId to) {
  Process& proc = process(from);
  auto it = proc.fds.find(fd);
  if (it == proc.fds.end()) return Result<Fd>{Errno::Inval, 0};
  return Result<Fd>{Errno::Ok, new_fd(to, it->second)};
}

Result<GemHandle> Driver::gem_of_fd(ProcessId p, Fd fd) {
  Process& proc = process(p);
  auto it = proc.fds.find(fd);
  if (it == proc.fds.end()) return Result<GemHandle>{Errno::Inval, 0};
  // A buffer the process already has a handle for gives that handle (DRM looks it up).
  for (const auto& [gem, bo] : proc.gems)
    if (bo == it->second) return Result<GemHandle>{Errno::Ok, gem};
  return Result<GemHandle>{Errno::Ok, new_gem(p, it->second)};
}

Task<Errno> Driver::close_fd(ProcessId p, Fd fd) {
  co_await sleep(cfg_.ioctl_latency);
  co_return drop_fd(p, fd);
}

Errno Driver::drop_fd(ProcessId p, Fd fd) {
  Process& proc = process(p);
  auto it = proc.fds.find(fd);
  if (it == proc.fds.end()) return Errno::Inval;
  const std::uint64_t bo = it->second;
  proc.fds.erase(it);
  unref(bo);  // closing fds never sends RELEASE
  return Errno::Ok;
}

Task<void> Driver::process_exit(ProcessId p) {
  co_await sleep(cfg_.ioctl_latency);
  auto pit = processes_.find(p);
  if (pit == processes_.end()) co_return;
  // Mappings first (the address space goes), then fds, then GEM handles.
  for (auto& [id, bo] : bos_) {
    for (auto it = bo.mappings.begin(); it != bo.mappings.end();) {
      if (it->process != p) {
        ++it;
        continue;
      }
      if (!bo.evicted) env_.gpuvm_unmap(p, it->va >> kPageShift, bo.pages);
      it = bo.mappings.erase(it);
      --bo.refs;  // released below through unref when it was the last
    }
  }
  co_await sleep(env_.gpuvm_flush_tlb(p, 0, 0, FlushKind::Heavyweight));
  // Buffers whose last reference was a mapping.
  std::vector<std::uint64_t> unreferenced;
  for (auto& [id, bo] : bos_)
    if (bo.refs == 0) unreferenced.push_back(id);
  for (std::uint64_t id : unreferenced) {
    ++bos_.at(id).refs;
    unref(id);
  }
  Process proc = std::move(processes_.at(p));
  processes_.erase(p);
  for (auto& [fd, bo] : proc.fds)
    unref(bo);
  for (auto& [g, id] : proc.gems)
    drop_handle(id);
}

// ---- export ----------------------------------------------------------------------------------

UalinkHandle Driver::new_handle() {
  UalinkHandle h;
  do {
    h.lo = (rng_.next() & ~0x3FFull) | self_;
  } while (h.lo == 0 || exports_.taken(h.lo));
  h.hi = rng_.next();
  return h;
}

Task<Result<UalinkHandle>> Driver::export_handle(ProcessId p, GemHandle gem) {
  const Time t0 = env_.now();
  co_await sleep(cfg_.ioctl_latency);
  // The check and the insert under one lock, as upstream fixed it. B8: unlocked, as in the
  // snapshot.
  const bool lock = !bug(Bug::B8);
  if (lock) co_await export_lock_.lock(env_, this);
  Result<UalinkHandle> r;
  if (std::optional<Result<UalinkHandle>> known = export_known(p, gem)) {
    r = *known;
  } else {
    // A new export: its node and dma-buf are allocated, which may sleep. The GEM lookup's
    // reference keeps the buffer meanwhile. B8: a concurrent export of the same buffer can
    // pass the check above meanwhile, and each makes a handle.
    const std::uint64_t id = bo_of(p, gem)->id;
    ++bos_.at(id).refs;
    co_await sleep(cfg_.export_alloc_latency);
    Bo& bo = bos_.at(id);
    if (!ualink_active())
      r.err = Errno::OpNotSupp;  // deactivated meanwhile: no table to insert into
    else if (bo.handle_count == 0)
      r.err = Errno::NoEnt;  // its last GEM handle was closed meanwhile
    else if (take_failure(FailPoint::ExportAlloc))
      r.err = Errno::NoMem;  // the node or the dma-buf could not be allocated
    else
      r = insert_export(bo);
    unref(id);
  }
  if (lock) export_lock_.unlock();
  export_time_.record(env_.now() - t0);
  if (r.err == Errno::Ok)
    env_.note_call("export", t0, fmt::format("{{\"handle_lo\": \"{:#x}\"}}", r.value.lo));
  co_return r;
}

Result<UalinkHandle> Driver::create_export(ProcessId p, GemHandle gem) {
  if (std::optional<Result<UalinkHandle>> known = export_known(p, gem)) return *known;
  return insert_export(*bo_of(p, gem));
}

std::optional<Result<UalinkHandle>> Driver::export_known(ProcessId p, GemHandle gem) {
  Result<UalinkHandle> r;
  Bo* bo = bo_of(p, gem);
  if (!ualink_active()) {
    r.err = Errno::OpNotSupp;
  } else if (!bo) {
    r.err = Errno::NoEnt;
  } else if (bo->domain != Domain::Vram) {
    r.err = Errno::OpNotSupp;
  } else if (bo->ualink) {
    exports_repeated_.inc();
    r.value = *bo->ualink;
  } else {
    return std::nullopt;
  }
  return r;
}

Result<UalinkHandle> Driver::insert_export(Bo& bo) {
  const ExportPtr node = exports_.insert(new_handle(), bo.id);
  bo.refs += 2;  // the node's reference, and the dma-buf the snapshot makes (never used)
  // B8: a handle made meanwhile by a concurrent export is replaced here; a last close revokes
  // only this one, and that node stays exported with its references.
  bo.ualink = node->handle();
  exports_created_.inc();
  return Result<UalinkHandle>{Errno::Ok, node->handle()};
}

std::size_t Driver::importer_count(const UalinkHandle& h) const {
  const ExportNode* node = exports_.find_lo(h.lo);
  return node ? node->importer_count() : 0;
}

ImportState Driver::import_state(const UalinkHandle& h) const {
  return imports_.state(h.lo);
}

std::optional<FailReason> Driver::import_failure(const UalinkHandle& h) const {
  const ImportNode* n = imports_.find(h);
  return n ? n->fail() : std::nullopt;
}

NpaRangeAllocator& Driver::window(AccelId importer) {
  // Source-aliasing: one window for everyone (the exporter's own), pages [0x800, 2^29 - 1).
  // Source-identification: importer I's window, [I<<29 | 512, I<<29 | 0x1FFFFFFF) in the
  // exporter's NPA VM.
  const bool alias = mode_ == NpaAddrMode::SourceAliasing;
  AccelId key = alias ? self_ : importer;
  auto it = windows_.find(key);
  if (it == windows_.end()) {
    // The window's last page (0x1FFFFFFF in the full 2 TiB window) is not handed out.
    const std::uint64_t end = cfg_.npa_window.count() / kPageSize - 1;
    const std::uint64_t first =
        alias ? alias_first_range_page(cfg_.accel_max) : NpaRangeAllocator::kRingPages;
    it = windows_.emplace(key, NpaRangeAllocator(first, end)).first;
    for (const Quarantine::Range& r : quarantine_.ranges)
      if (r.window == key) it->second.reserve(r.start, r.pages);
  }
  return it->second;
}

std::uint64_t Driver::npa_key(AccelId importer, std::uint64_t window_page) const {
  if (mode_ == NpaAddrMode::SourceIdentification)
    return (static_cast<std::uint64_t>(importer) << kNpaWindowPageBits) | window_page;
  return window_page;
}

Task<void> Driver::map_range(const Bo& bo, std::uint64_t key_base, std::uint64_t tag) {
  map_npa_pages(bo, key_base, tag);
  co_await sleep(cfg_.pte_update_latency * static_cast<std::int64_t>(bo.pages));
  co_await sleep(env_.npa_flush_tlb());
}

void Driver::map_npa_pages(const Bo& bo, std::uint64_t key_base, std::uint64_t tag) {
  env_.npa_map(key_base, std::span<const std::uint64_t>(bo.vram_pages).first(bo.pages), tag,
               cfg_.max_fragment_log2());
}

void Driver::unmap_range(std::uint64_t key_base, std::uint64_t pages) {
  env_.npa_unmap(key_base, pages);
}

void Driver::free_range(AccelId importer, std::uint64_t window_page, std::uint64_t pages,
                        std::uint64_t tag) {
  const std::uint64_t key = npa_key(importer, window_page);
  if (env_.npa_any_mapped(key, pages))
    env_.note_violation(fmt::format(
        "gpu{}: NPA range at page {:#x} ({} pages) of export {:016x} freed while PTEs still "
        "map it",
        self_, key, pages, tag));
  window(importer).free(window_page, pages);
}

void Driver::signal(ProcessId p) {
  auto it = processes_.find(p);
  if (it == processes_.end()) return;
  Process& proc = it->second;
  if (proc.waiting) {
    proc.signalled = true;
    proc.waiting->answered().wake_all();
  } else if (proc.handshake) {
    proc.signalled = true;
    proc.handshake->wake_all();
  }
}

void Driver::fail_next(FailPoint point, std::uint32_t count) {
  failures_[static_cast<std::size_t>(point)] = count;
}

bool Driver::take_failure(FailPoint point) {
  std::uint32_t& left = failures_[static_cast<std::size_t>(point)];
  if (left == 0) return false;
  --left;
  injected_failures_.inc();
  return true;
}

void Driver::unpin(Bo& bo) {
  if (cfg_.exported_memory == ExportedMemory::Unpinned) return;
  if (bo.pins == 0) {
    env_.note_violation(
        fmt::format("gpu{}: {} unpinned more often than pinned", self_, describe(bo)));
    return;
  }
  --bo.pins;
  unpins_.inc();
  env_.vram_unpin(bo.vram_pages);
}

void Driver::pin(Bo& bo) {
  if (cfg_.exported_memory == ExportedMemory::Unpinned) return;
  ++bo.pins;
  pins_.inc();
  env_.vram_pin(bo.vram_pages);
}

Task<void> Driver::on_npa_req(AccelId from, const Message& m) {
  if (!conns_.established(from)) {
    dropped_.inc();
    co_await setup(from, bug(Bug::B7));  // and drop the request: the importer will time out
    co_return;
  }
  auto fail = [&](FailReason r) {
    Message f;
    f.type = MsgType::NpaFail;
    f.handle = m.handle;
    f.reason = r;
    return send(from, f);
  };
  if (!vpod_.contains(from)) {
    refused_.inc();
    co_await fail(FailReason::Error);
    co_return;
  }
  ExportPtr node = exports_.find(m.handle);
  if (!node) {
    co_await fail(FailReason::InvalidHandle);
    co_return;
  }
  exports_.hold(*node);
  Bo& bo = bos_.at(node->bo());
  const std::uint64_t tag = node->handle().lo;
  // Pinned once per importer and connection: a request repeated on the same connection (the
  // importer gave up waiting, ETIME or ETIMEDOUT, and asks again) finds its pin there. An
  // entry of an older connection generation should have gone with the connection's reset
  // (B1 keeps it): that request pins again, as the snapshot does. B6: every request pins,
  // and the revoke, which unpins once per importer, leaves the extra pins behind.
  const bool pins =
      bug(Bug::B6) || !node->importer(from) || node->generation(from) != conns_.generation(from);
  if (pins && take_failure(FailPoint::Pin)) {  // a fault step's: the pin fails
    co_await fail(FailReason::Error);
    put_export(node);
    co_return;
  }
  if (pins) pin(bo);

  const RangeGrant g = grant_range(*node, from, bo.pages);
  const std::uint64_t window_page = g.window_page;
  const bool fresh_range = g.fresh;
  // Takes back what this request did: its pin, and the range it allocated (unmapped first if
  // it was mapped). A refused grant allocated nothing.
  auto undo = [&](bool mapped) {
    Bo& b = bos_.at(node->bo());
    if (pins) unpin(b);
    if (!fresh_range) return;
    if (mapped) {
      unmap_range(npa_key(from, window_page), b.pages);
      env_.npa_flush_tlb();
    }
    free_range(from, window_page, b.pages, tag);
    exports_.undo_range(*node, from);
  };
  std::optional<FailReason> failure = g.failure;
  if (!failure && fresh_range && take_failure(FailPoint::Map))  // a fault step's
    failure = FailReason::Error;
  if (failure) {
    undo(false);
    co_await fail(*failure);
    put_export(node);
    co_return;
  }
  if (fresh_range) co_await map_range(bo, npa_key(from, window_page), tag);

  Message rsp;
  rsp.type = MsgType::NpaRsp;
  rsp.handle = node->handle();
  rsp.size_pages = static_cast<std::uint32_t>(bos_.at(node->bo()).pages);
  rsp.npa_page = static_cast<std::uint32_t>(window_page);
  const std::uint32_t gen = conns_.generation(from);
  // Granted (again, after a reset that released it): its accesses are its own from the moment
  // the answer can reach it.
  env_.note_granted(tag, from);
  // While it is sent, the grant is in no table yet (the importer is added once the send has
  // returned): a reset meanwhile must still count this importer as a former one.
  struct Granting {
    std::vector<std::uint16_t>& count;
    AccelId importer;
    ~Granting() { --count[importer]; }
  };
  ++granting_[from];
  const Granting granting{granting_, from};
  const Errno sent = co_await send(from, rsp);
  if (sent != Errno::Ok) {
    undo(true);                                                // and send no FAIL
    if (!node->importer(from)) env_.note_released(tag, from);  // it holds no grant
  } else {
    exports_.add_importer(*node, from, gen);
  }
  put_export(node);
}

RangeGrant Driver::grant_range(ExportNode& node, AccelId from, std::uint64_t pages) {
  return exports_.grant_range(node, from, [&] { return window(from).allocate(pages); });
}

// ---- revoke --------------------------------------------------------------------------------

void Driver::revoke(Bo& bo) {
  ExportPtr node = exports_.revoke(bo.ualink->lo, env_.now());
  if (!node) return;
  revokes_.inc();
  put_export(node);  // the export table's reference
}

void Driver::put_export(const ExportPtr& node) {
  if (!exports_.put(*node)) return;
  cleanup_queue_.post(node);
}

Task<void> Driver::cleanup(ExportPtr node) {
  const std::vector<AccelId> orig = exports_.start_cleanup(*node);
  const std::uint64_t tag = node->handle().lo;
  const std::uint64_t bo_id = node->bo();

  auto release_bo = [&](bool leak_dmabuf) {
    Bo& bo = bos_.at(bo_id);
    bo.ualink.reset();
    if (!leak_dmabuf) unref(bo_id);  // the dma-buf
    unref(bo_id);                    // the node's reference
  };

  if (orig.empty()) {
    // No importers: drop the buffer and free the node (B3: the dma-buf, and with it the
    // buffer, leak).
    release_bo(bug(Bug::B3));
    exports_.remove(*node);
    revoke_time_.record(env_.now() - node->revoke_started());
    env_.note_call("revoke", node->revoke_started(), "{\"importers\": 0}");
    co_return;
  }

  const std::uint64_t pages = bos_.at(bo_id).pages;
  auto ready = [&](AccelId i) { return conns_.established_at(i, node->generation(i)); };
  auto range_of = [&](AccelId i) -> std::optional<std::uint64_t> {
    const std::optional<std::uint64_t> page = exports_.range_of(*node, i);
    if (!page) return std::nullopt;
    return npa_key(i, *page);
  };

  // 1. PTE.X = 1 for the ranges of importers still ready: their accesses now get retries.
  std::vector<AccelId> live;
  for (AccelId i : orig)
    if (ready(i)) live.push_back(i);
  std::vector<std::uint64_t> retried;
  for (AccelId i : live) {
    auto key = range_of(i);
    if (!key || std::find(retried.begin(), retried.end(), *key) != retried.end()) continue;
    retried.push_back(*key);
    env_.npa_set_retry(*key, pages, true);
  }
  co_await sleep(cfg_.pte_update_latency * static_cast<std::int64_t>(pages * retried.size()));
  co_await sleep(env_.npa_flush_tlb());

  // 2. A remote heavyweight shootdown to each; importers no longer ready are dropped.
  for (AccelId i : orig) {
    if (!ready(i)) {
      exports_.drop_stale(*node, i);
      continue;
    }
    co_await shootdown(i);
  }

  // 3. Unmap (no-retry invalid PTEs) and flush. B6: importers dropped as stale keep theirs.
  std::vector<std::uint64_t> unmapped;
  for (AccelId i : orig) {
    if (bug(Bug::B6) && !node->importer(i)) continue;
    auto key = range_of(i);
    if (!key || std::find(unmapped.begin(), unmapped.end(), *key) != unmapped.end()) continue;
    unmapped.push_back(*key);
    unmap_range(*key, pages);
  }
  co_await sleep(cfg_.pte_update_latency * static_cast<std::int64_t>(pages * unmapped.size()));
  co_await sleep(env_.npa_flush_tlb());

  // 4. Unpin once per importer, clear the handle, release the dma-buf and the buffer.
  for (std::size_t k = 0; k < orig.size(); ++k)
    unpin(bos_.at(bo_id));
  release_bo(false);

  // 5. Mark each ready importer pending, then send NPA_REVOKE; a failed send clears the mark.
  //    B4: each is marked only as its NPA_REVOKE goes out, so a RELEASE that empties the
  //    pending set while later importers are still to be marked completes the wait early.
  std::vector<AccelId> notify;
  for (AccelId i : orig)
    if (node->importer(i)) notify.push_back(i);
  if (!bug(Bug::B4))
    for (AccelId i : notify)
      exports_.expect_release(*node, i);
  for (AccelId i : notify) {
    if (bug(Bug::B4)) exports_.expect_release(*node, i);
    Message rv;
    rv.type = MsgType::NpaRevoke;
    rv.handle = node->handle();
    if (co_await send(i, rv) != Errno::Ok) exports_.cancel_release(*node, i);
  }

  // 6. Wait up to release_timeout for the releases.
  auto any_pending = [&] {
    for (AccelId i : orig)
      if (node->pending(i)) return true;
    return false;
  };
  if (bug(Bug::B4)) {
    // The snapshot waits on a completion whenever importers remain, whether or not any
    // NPA_REVOKE went out (then for the whole timeout); one completed meanwhile ends it at
    // once, with later importers' releases still to come.
    if (node->has_importers() && !node->completed())
      co_await node->released().wait(env_, cfg_.release_timeout);
  } else if (any_pending()) {
    const Time deadline = env_.now() + cfg_.release_timeout;
    while (any_pending() && env_.now() < deadline)
      co_await node->released().wait(env_, deadline - env_.now());
  }
  revoke_time_.record(env_.now() - node->revoke_started());
  env_.note_call("revoke", node->revoke_started(),
                 fmt::format("{{\"importers\": {}}}", orig.size()));

  // 7. Free the NPA ranges of every importer in the snapshot.
  for (const NpaRange& r : exports_.take_ranges(*node, orig))
    free_range(r.shared ? self_ : r.importer, r.window_page, pages, tag);

  // 8. Importers that never answered: reset the connection.
  for (AccelId i : orig) {
    if (!node->pending(i)) continue;
    releases_missing_.inc();
    exports_.cancel_release(*node, i);
    env_.note_released(tag, i);
    co_await reset_connection(i, ConnState::NotReady, node->generation(i));
  }
  // 9. Free the node.
  exports_.remove(*node);
}

void Driver::on_npa_release(AccelId from, const Message& m) {
  const ExportPtr node = exports_.find_revoked(m.handle);
  if (!node) {
    unsolicited_.inc();
    return;
  }
  if (!exports_.release(*node, from)) releases_unexpected_.inc();
  env_.note_released(node->handle().lo, from);
  if (!node->any_pending()) exports_.complete(*node);
}

// ---- import ----------------------------------------------------------------------------------

Task<Result<Fd>> Driver::import_handle(ProcessId p, UalinkHandle h) {
  const Time t0 = env_.now();
  co_await sleep(cfg_.ioctl_latency);
  const AccelId r = h.exporter();
  auto failed = [&](Errno e) {
    import_errors_.inc();
    return Result<Fd>{e, -1};
  };
  if (!ualink_active()) co_return failed(Errno::OpNotSupp);
  if (r >= cfg_.accel_max) co_return failed(Errno::Inval);
  if (!vpod_.contains(r)) {
    refused_.inc();
    co_return failed(Errno::Inval);  // not authorized: the exporter is outside our vPod
  }

  // A repeated import (B5: hi unchecked): EAGAIN, EINVAL, or a new fd on the node's buffer.
  if (const auto cached = imports_.cached(h, !bug(Bug::B5))) {
    if (cached->err != Errno::Ok) co_return failed(cached->err);
    imports_repeated_.inc();
    Fd fd = new_fd(p, cached->bo);
    import_repeat_time_.record(env_.now() - t0);
    env_.note_call("import (repeated)", t0, fmt::format("{{\"exporter\": {}}}", h.exporter()));
    co_return Result<Fd>{Errno::Ok, fd};
  }

  // A new node: another thread importing the same handle meanwhile wins the insert.
  co_await sleep(cfg_.alloc_latency);
  const ImportPtr node = imports_.insert(h);
  if (!node) co_return failed(Errno::Busy);
  imports_first_.inc();
  auto abandon = [&](Errno e) {
    imports_.abandon(node);
    return failed(e);
  };

  Errno e = co_await setup(r, true, p);
  if (e != Errno::Ok) co_return abandon(e);
  const std::uint32_t gen = conns_.generation(r);
  imports_.sent(*node, gen);
  Message req;
  req.type = MsgType::NpaReq;
  req.handle = h;
  e = co_await send(r, req);
  if (e != Errno::Ok) co_return abandon(e);
  if (node->state() == ImportState::NotReady) {
    process(p).waiting = node;
    const bool answered = co_await node->answered().wait(env_, cfg_.response_timeout);
    Process& proc = process(p);
    proc.waiting.reset();
    if (std::exchange(proc.signalled, false)) co_return abandon(Errno::RestartSys);
    if (!answered && node->state() == ImportState::NotReady) {
      Result<Fd> res = abandon(Errno::TimedOut);
      co_await reset_connection(r, ConnState::NotReady, gen);
      co_return res;
    }
  }
  // TEARDOWN (a reset meanwhile), NPA_FAIL, or an unusable NPA or size: the import fails.
  if (const Errno answer = ImportTable::outcome(*node); answer != Errno::Ok)
    co_return abandon(answer);

  // A buffer in the NPA domain over [npa, npa + size), no CPU access; a GEM handle for the
  // driver's internal client and a dma-buf, which the node keeps.
  co_await sleep(cfg_.alloc_latency);
  if (node->state() == ImportState::Teardown) co_return abandon(Errno::Inval);
  // An allocation failure (a fault step's): the node goes, with no RELEASE (§5: any error
  // frees the node); the exporter keeps its grant.
  if (take_failure(FailPoint::ImportAlloc)) co_return abandon(Errno::NoMem);
  const Fd fd = finish_import(p, *node);
  import_time_.record(env_.now() - t0);
  env_.note_call("import", t0,
                 fmt::format(R"({{"exporter": {}, "npa_page": "{:#x}", "pages": {}}})",
                             h.exporter(), node->npa_page(), node->size_pages()));
  co_return Result<Fd>{Errno::Ok, fd};
}

Fd Driver::finish_import(ProcessId p, ImportNode& node) {
  const std::uint64_t bo = new_bo(Domain::Npa, node.size_pages());
  bos_[bo].npa_page = node.npa_page();
  bos_[bo].grant = node.handle().lo;
  imports_.ready(node, bo);
  ++bos_[bo].refs;  // the node's reference
  return new_fd(p, bo);
}

void Driver::on_npa_rsp(AccelId from, const Message& m) {
  // Unsolicited: no node, or one not waiting (the snapshot overwrites its fields anyway, B5).
  if (!imports_.respond(m.handle.lo, from, m.npa_page, m.size_pages, bug(Bug::B5)))
    unsolicited_.inc();
}

void Driver::on_npa_fail(AccelId, const Message& m) {
  // Unsolicited: no node, or one not waiting (B5: the snapshot overwrites its reason anyway).
  if (!imports_.fail(m.handle.lo, m.reason, bug(Bug::B5))) unsolicited_.inc();
}

Task<void> Driver::invalidate_import(const ImportPtr& node) {
  auto it = bos_.find(node->bo());
  if (node->bo() == 0 || it == bos_.end()) co_return;
  Bo& bo = it->second;
  // Evict to an empty placement: every VM mapping of it loses its PTEs.
  bo.evicted = true;
  std::uint64_t ptes = 0;
  std::vector<ProcessId> vms;
  for (const Mapping& m : bo.mappings) {
    env_.gpuvm_unmap(m.process, m.va >> kPageShift, bo.pages);
    ptes += bo.pages;
    if (std::find(vms.begin(), vms.end(), m.process) == vms.end()) vms.push_back(m.process);
  }
  Time flush;
  for (const Mapping& m : bo.mappings)
    flush += env_.gpuvm_flush_tlb(m.process, m.va >> kPageShift, bo.pages, FlushKind::Heavyweight);
  co_await sleep(cfg_.pte_update_latency * static_cast<std::int64_t>(ptes) + flush);
}

Task<void> Driver::on_npa_revoke(AccelId from, const Message& m) {
  // An import not READY yet has no buffer or dma-buf. B5: the snapshot's handler dereferences
  // the NULL dma-buf: a kernel oops, reported; the model then drops the message (no release:
  // the exporter resets this importer after its timeout). Fixed: the import ends (EINVAL, no
  // buffer made) and the release goes back at once, as for a READY one.
  if (const ImportNode* early = imports_.find(m.handle);
      early && early->state() != ImportState::Ready && bug(Bug::B5)) {
    env_.note_violation(fmt::format(
        "gpu{}: kernel oops: NPA_REVOKE from gpu{} for import {:016x} before it was READY "
        "(its dma-buf, still NULL, dereferenced)",
        self_, from, m.handle.lo));
    co_return;
  }
  // TEARDOWN and out. A mismatch is ignored with no reply: the exporter resets after its timeout.
  const ImportPtr node = imports_.revoke(m.handle);
  if (!node) {
    unsolicited_.inc();
    co_return;
  }
  co_await invalidate_import(node);
  if (node->bo() && bos_.count(node->bo())) unref(node->bo());  // user fds survive without backing
  Message rel;
  rel.type = MsgType::NpaRelease;
  rel.handle = node->handle();
  co_await send(from, rel);
}

// ---- connections -----------------------------------------------------------------------------

Task<Errno> Driver::setup(AccelId peer, bool wait, std::optional<ProcessId> caller) {
  switch (conns_.state(peer)) {
    case ConnState::Established: co_return Errno::Ok;
    case ConnState::InProgress:
    case ConnState::Pending: co_return Errno::Again;
    case ConnState::NotReady: break;
  }
  conns_.start(peer);
  Message hello;
  hello.type = MsgType::Hello;
  hello.hello_recv = peer;
  hello.hello_sender = self_;
  const Errno e = co_await send(peer, hello);
  if (e != Errno::Ok) {
    conns_.give_up(peer);
    co_return e;
  }
  if (!wait) co_return Errno::Again;
  // Wait while the handshake is ours and under way (a deactivation meanwhile dropped it), up
  // to response_timeout; a signal to the calling process ends the wait.
  const Time deadline = env_.now() + cfg_.response_timeout;
  while (conns_.state(peer) == ConnState::InProgress) {
    const Time left = deadline - env_.now();
    if (caller) process(*caller).handshake = &conns_.changed(peer);
    const bool woken = left > Time{} && co_await conns_.changed(peer).wait(env_, left);
    if (caller) {
      Process& proc = process(*caller);
      proc.handshake = nullptr;
      if (std::exchange(proc.signalled, false)) {
        conns_.give_up(peer);  // IN_PROGRESS -> NOT_READY, others waiting woken
        co_return Errno::RestartSys;
      }
    }
    if (!woken) {
      if (conns_.state(peer) == ConnState::InProgress) {
        conns_.time_out(peer);
        co_return Errno::TimedOut;
      }
      break;
    }
  }
  if (conns_.established(peer)) co_return Errno::Ok;
  co_return ualink_active() ? Errno::Again : Errno::OpNotSupp;
}

void Driver::established(AccelId peer) {
  conns_.establish(peer);
  check_stale_imports(peer);
  quarantine_connected(peer);
}

// Before the reset's state goes: whom this driver had granted an export to, and the ranges
// given out, added to a quarantine still under way.
void Driver::quarantine_on_reset() {
  if (quarantine_.pending.empty()) quarantine_.pending.assign(kMaxAccels, false);
  std::vector<bool> former(kMaxAccels, false);
  for (const auto& n : exports_.nodes())
    for (AccelId i = 0; i < kMaxAccels; ++i)
      former[i] = former[i] || n->importer(i);
  for (AccelId i = 0; i < kMaxAccels; ++i)
    if ((former[i] || granting_[i] > 0) && !quarantine_.pending[i]) {
      quarantine_.pending[i] = true;
      ++quarantine_.left;
    }
  if (quarantine_.left == 0) return;
  // Kept out of use in the windows there are (a deactivation keeps them; a reset drops them,
  // and window() reserves the ranges again in the new ones).
  for (auto& [key, w] : windows_)
    for (const auto& [start, pages] : w.allocated()) {
      quarantine_.ranges.push_back({key, start, pages});
      w.reserve(start, pages);
    }
}

// A connection established with a former importer: on its side, the handshake reset what it
// held of ours (§9), stale imports included. The last one lifts the quarantine.
void Driver::quarantine_connected(AccelId peer) {
  if (quarantine_.left == 0 || !quarantine_.pending[peer]) return;
  quarantine_.pending[peer] = false;
  if (--quarantine_.left > 0) return;
  for (const Quarantine::Range& r : quarantine_.ranges)
    if (auto w = windows_.find(r.window); w != windows_.end())
      w->second.unreserve(r.start, r.pages);
  quarantine_.ranges.clear();
}

void Driver::set_down(bool down) {
  const bool back = down_ && !down;
  down_ = down;
  if (back) came_back();
}

void Driver::came_back() {
  if (cfg_.after_reset != AfterReset::Announce || quarantine_.left == 0) return;
  for (AccelId p = 0; p < kMaxAccels; ++p)
    if (quarantine_.pending[p]) runner_.run(announce_to(p));
}

Task<void> Driver::announce_to(AccelId peer) {
  co_await setup(peer, true);
}

void Driver::check_stale_imports(AccelId peer) {
  // An import lives until its exporter revokes it or the connection is reset (§5). A peer
  // whose connection is established anew has restarted or been reset, and forgot what it
  // exported on the old one: it never revokes it, and hands out the same NPA ranges again,
  // which the old import's mappings would reach. Its reset must have taken it (B1 skips it).
  const std::uint32_t gen = conns_.generation(peer);
  for (const ImportNode* n : imports_.older_than(peer, gen))
    env_.note_violation(fmt::format(
        "gpu{}: import {:016x} from gpu{} outlived its connection: made at generation {}, the "
        "connection is at generation {} now and the import was never torn down",
        self_, n->handle().lo, peer, n->generation(), gen));
}

Task<void> Driver::reset_connection(AccelId peer, ConnState to, std::uint32_t gen) {
  // Acts only if the connection is established at that generation (0: any).
  if (!conns_.reset(peer, to, gen)) co_return;
  connection_resets_.inc();

  // Imports from the peer: torn down, invalidated, dropped. No RELEASE.
  const std::vector<ImportPtr> gone = imports_.tear_down(peer);
  // Exports to the peer: bit cleared, unpinned; ranges unmapped and freed (alias: only when
  // no importer is left). No REVOKE, no shootdown. A revoked export is not reached: revoke()
  // unlinked it from the importers' export lists, so its cleanup still waits for the peer's
  // release and then resets it (§7 steps 6 and 8), as the snapshot does.
  for (const ExportPtr& n : exports_.nodes()) {
    if (n->revoked()) continue;
    const std::optional<ExportTable::Dropped> dropped = exports_.drop_importer(*n, peer);
    if (!dropped) continue;
    env_.note_released(n->handle().lo, peer);
    // Once cleanup has its snapshot, it unpins, unmaps and frees for every importer in it.
    auto bo = bos_.find(n->bo());
    if (bo != bos_.end() && dropped->mine) unpin(bo->second);
    const std::uint64_t pages = bo != bos_.end() ? bo->second.pages : 0;
    if (const std::optional<NpaRange>& r = dropped->range) {
      unmap_range(npa_key(peer, r->window_page), pages);
      env_.npa_flush_tlb();
      free_range(r->shared ? self_ : peer, r->window_page, pages, n->handle().lo);
    }
    if (n->cleaning() && !n->any_pending()) exports_.complete(*n);
  }
  for (const ImportPtr& node : gone) {
    co_await invalidate_import(node);
    if (node->bo() && bos_.count(node->bo())) unref(node->bo());
  }
}

Task<void> Driver::on_hello(AccelId from, const Message& m) {
  if (m.hello_recv != self_ || m.hello_sender != from || from >= cfg_.accel_max) co_return;
  if (conns_.established(from)) {
    // The peer was reset: what we held with it is gone. B1: PENDING is set first, so the
    // reset (which needs ESTABLISHED) never runs.
    if (!bug(Bug::B1)) co_await reset_connection(from, ConnState::Pending, conns_.generation(from));
    conns_.peer_restarted(from);
  } else {
    conns_.hello_received(from);
  }
  Message ack;
  ack.type = MsgType::HelloAck;
  if (co_await send(from, ack) != Errno::Ok) {
    conns_.drop(from);
    co_return;
  }
  established(from);
}

void Driver::on_hello_ack(AccelId from) {
  if (conns_.state(from) != ConnState::InProgress) return;
  established(from);
}

// ---- messages and workers --------------------------------------------------------------------

Task<Errno> Driver::send(AccelId dst, Message m) {
  const Errno e = co_await env_.send(dst, Ring::Interrupt, encode(m));
  if (e == Errno::Ok)
    sent_by_type_[static_cast<std::size_t>(m.type) - 1]->inc();
  else
    send_failures_.inc();
  co_return e;
}

Task<Errno> Driver::shootdown(AccelId dst) {
  shootdowns_.inc();
  // TLB_INV, heavyweight (0x2); the snapshot always flushes everything.
  const Errno e = co_await env_.send(dst, Ring::Tlb, Dwords{0x2, 0, 0, 0});
  if (e != Errno::Ok) send_failures_.inc();
  co_return e;
}

void Driver::on_interrupt(AccelId from, const Dwords& dw) {
  irq_queue_.post({from, dw});
}

Task<void> Driver::handle(AccelId from, Dwords dw) {
  co_await sleep(cfg_.irq_handler_latency);
  if (!ualink_active()) co_return;  // deactivated meanwhile: the message goes with the tables
  Message m;
  if (!decode(dw, from, self_, m)) co_return;
  received_by_type_[static_cast<std::size_t>(m.type) - 1]->inc();
  env_.note_message(msg_name(m.type), from);
  const bool needs_connection =
      m.type == MsgType::NpaRsp || m.type == MsgType::NpaFail;  // REQ checks for itself
  if (needs_connection && !conns_.established(from)) {
    dropped_.inc();
    co_await setup(from, bug(Bug::B7));
    co_return;
  }
  switch (m.type) {
    case MsgType::Hello: co_await on_hello(from, m); break;
    case MsgType::HelloAck: on_hello_ack(from); break;
    case MsgType::NpaReq: co_await on_npa_req(from, m); break;
    case MsgType::NpaRsp: on_npa_rsp(from, m); break;
    case MsgType::NpaFail: on_npa_fail(from, m); break;
    case MsgType::NpaRevoke: co_await on_npa_revoke(from, m); break;
    case MsgType::NpaRelease: on_npa_release(from, m); break;
  }
}

// The v1 draft: TTM may move exported pages. Each eviction makes the page's NPA PTEs
// not-present (importers retry), shoots down every importer's TLB, copies the page and maps
// the new place.
Task<void> Driver::eviction_worker() {
  while (true) {
    const double u = rng_.uniform();
    const double mean_ps = static_cast<double>(cfg_.migration.eviction_interval.as_ps());
    co_await sleep(Time::ps(static_cast<std::int64_t>(-std::log1p(-u) * mean_ps) + 1));
    // A page of an export that has importers, chosen at random.
    const std::vector<ExportPtr> candidates = exports_.with_importers();  // by handle lo
    if (candidates.empty()) continue;
    ExportPtr node = candidates[rng_.below(candidates.size())];
    exports_.hold(*node);
    Bo& bo = bos_.at(node->bo());
    const std::uint64_t page = rng_.below(bo.pages);
    std::vector<std::uint64_t> bases;  // the first NPA page of each range mapping the buffer
    if (node->shared_npa()) bases.push_back(npa_key(self_, *node->shared_npa()));
    for (const auto& [imp, wp] : node->ident_npa())
      bases.push_back(npa_key(imp, wp));
    for (std::uint64_t b : bases)
      env_.npa_set_retry(b + page, true);
    co_await sleep(cfg_.pte_update_latency * static_cast<std::int64_t>(bases.size()) +
                   env_.npa_flush_tlb());
    for (AccelId i = 0; i < kMaxAccels; ++i)
      if (node->importer(i)) co_await shootdown(i);
    co_await sleep(cfg_.migration.copy_latency);
    auto fresh = co_await env_.vram_alloc(1);
    Bo& b = bos_.at(node->bo());
    std::uint64_t rewritten = 0;
    if (fresh && !node->revoked()) {
      env_.vram_copy_page(b.vram_pages[page], (*fresh)[0]);  // what copy_latency stood for
      env_.vram_free(std::span<const std::uint64_t>(&b.vram_pages[page], 1));
      b.vram_pages[page] = (*fresh)[0];
      // The page's new place breaks the fragment it was in: rewrite the PTEs of its aligned
      // 2 MiB block (a fragment never crosses one) with fragments that hold again.
      const std::uint64_t first = page & ~((1ull << kFragment2M) - 1);
      const std::uint64_t count = std::min<std::uint64_t>(b.pages - first, 1ull << kFragment2M);
      for (std::uint64_t base : bases) {
        env_.npa_map(base + first,
                     std::span<const std::uint64_t>(b.vram_pages).subspan(first, count),
                     node->handle().lo, cfg_.max_fragment_log2());
        rewritten += count;
      }
      // The owner's own mappings of the buffer point at the old page too.
      Time flushes;
      for (const auto& m : b.mappings) {
        Pte proto;
        proto.writable = true;
        proto.target = PteTarget::Vram;
        proto.fragment = cfg_.max_fragment_log2();
        const std::uint64_t va_page = (m.va >> kPageShift) + first;
        env_.gpuvm_map(m.process, va_page, count, proto,
                       std::span<const std::uint64_t>(b.vram_pages).subspan(first, count));
        flushes += env_.gpuvm_flush_tlb(m.process, va_page, count, FlushKind::Lightweight);
        rewritten += count;
      }
      co_await sleep(flushes);
      evictions_.inc();
    } else {
      if (fresh) env_.vram_free(*fresh);
      if (!node->revoked())
        for (std::uint64_t base : bases)
          env_.npa_set_retry(base + page, false);
    }
    co_await sleep(cfg_.pte_update_latency * static_cast<std::int64_t>(rewritten) +
                   env_.npa_flush_tlb());
    put_export(node);
  }
}

// ---- device reset and accounting -------------------------------------------------------------

void Driver::device_reset() {
  device_resets_.inc();
  ++epoch_;
  // It comes back READY with its vPod: the reset's down time covers the driver's reload and
  // its bring-up (the shell brings the hardware back the same way).
  state_ = AccelState::Ready;
  if (!ppod_) ppod_ = home_ppod_;  // the PSP's pPod, as before
  vpod_committed_ = true;
  failures_ = {};  // a fault step's pending failures go with the device
  if (cfg_.after_reset != AfterReset::Lazy) quarantine_on_reset();
  // Abandon everything in flight; the frames go, the state goes.
  runner_.cancel_all();
  bos_.clear();
  processes_.clear();
  exports_.clear();
  imports_.clear();
  conns_.clear();
  windows_.clear();
  irq_queue_.clear();
  cleanup_queue_.clear();
  next_bo_ = 1;
  export_lock_.forget(this);  // if its holder was abandoned with everything else
  start_workers();
}

bool Driver::quiescent() const {
  return irq_queue_.idle() && cleanup_queue_.idle() && exports_.revoking() == 0 &&
         runner_.running() <= workers();
}

Holdings Driver::holdings() const {
  Holdings h;
  h.buffers = bos_.size();
  for (const auto& [id, bo] : bos_) {
    h.pins += bo.pins;
    h.details.push_back({id, fmt::format("{}: {} reference(s), {} handle(s), {} pin(s)",
                                         describe(bo), bo.refs, bo.handle_count, bo.pins)});
  }
  for (const auto& n : imports_.nodes())
    h.held_imports.push_back({n->handle(), n->bo(),
                              conns_.established(n->handle().exporter()) &&
                                  conns_.generation(n->handle().exporter()) == n->generation()});
  for (const auto& n : exports_.nodes())
    for (AccelId i = 0; i < kMaxAccels; ++i)
      if (n->importer(i)) h.grants.emplace_back(n->handle().lo, i);
  for (const auto& [owner, w] : windows_)
    h.npa_ranges += w.allocated_ranges();
  h.exports = exports_.size();
  h.revoking = exports_.revoking();
  h.imports = imports_.size();
  for (const auto& [p, proc] : processes_) {
    h.handles += proc.gems.size();
    h.fds += proc.fds.size();
  }
  h.waiters += conns_.waiting();
  h.waiters += imports_.waiting();
  // The IRQ and cleanup workers (and the eviction worker) always run; anything else is a
  // call or a message still in progress.
  const std::size_t running = runner_.running();
  h.busy_tasks = running > workers() ? running - workers() : 0;
  return h;
}

}  // namespace podsim::driver

namespace podsim::driver {

// ---- direct setup ------------------------------------------------------------------------------

Result<GemHandle> Driver::direct_gem_create(ProcessId p, std::vector<std::uint64_t> vram_pages) {
  if (vram_pages.empty()) return Result<GemHandle>{Errno::Inval, 0};
  const std::uint64_t pages = vram_pages.size();
  return Result<GemHandle>{Errno::Ok, create_gem(p, Domain::Vram, pages, std::move(vram_pages))};
}

Errno Driver::direct_gem_va_map(ProcessId p, GemHandle gem, std::uint64_t va) {
  const Errno e = map_va(p, gem, va);
  if (e == Errno::Ok)
    env_.gpuvm_flush_tlb(p, va >> kPageShift, bo_of(p, gem)->pages, FlushKind::Lightweight);
  return e;
}

Result<UalinkHandle> Driver::direct_export(ProcessId p, GemHandle gem) {
  return create_export(p, gem);
}

void Driver::direct_connect(AccelId peer) {
  if (!conns_.established(peer)) established(peer);
}

Result<Driver::NpaGrant> Driver::direct_grant(AccelId from, const UalinkHandle& h) {
  Result<NpaGrant> r;
  if (!conns_.established(from)) {
    r.err = Errno::TimedOut;  // the request would be dropped and the importer time out
    return r;
  }
  ExportPtr node = exports_.find(h);
  if (!vpod_.contains(from) || !node) {
    r.err = Errno::Inval;  // NPA_FAIL
    return r;
  }
  exports_.hold(*node);
  Bo& bo = bos_.at(node->bo());
  pin(bo);
  const RangeGrant g = grant_range(*node, from, bo.pages);
  if (g.failure) {
    unpin(bo);
    put_export(node);
    r.err = errno_of(*g.failure);
    return r;
  }
  if (g.fresh) {
    map_npa_pages(bo, npa_key(from, g.window_page), node->handle().lo);
    env_.npa_flush_tlb();
  }
  exports_.add_importer(*node, from, conns_.generation(from));
  env_.note_granted(node->handle().lo, from);
  r.value =
      NpaGrant{static_cast<std::uint32_t>(g.window_page), static_cast<std::uint32_t>(bo.pages)};
  put_export(node);
  return r;
}

Result<Fd> Driver::direct_import(ProcessId p, const UalinkHandle& h, const NpaGrant& g) {
  const AccelId r = h.exporter();
  if (!ualink_active()) return Result<Fd>{Errno::OpNotSupp, -1};
  if (r >= cfg_.accel_max || !vpod_.contains(r)) return Result<Fd>{Errno::Inval, -1};
  if (imports_.contains(h.lo)) return Result<Fd>{Errno::Busy, -1};  // only first imports here
  if (!ImportTable::usable(g.npa_page, g.size_pages)) return Result<Fd>{Errno::Inval, -1};
  // As NPA_RSP leaves the node: the grant's NPA and size, PENDING.
  const ImportPtr node = imports_.insert(h);
  imports_.sent(*node, conns_.generation(r));
  imports_.respond(h.lo, r, g.npa_page, g.size_pages, false);
  imports_first_.inc();
  return Result<Fd>{Errno::Ok, finish_import(p, *node)};
}

// ---- state digest ------------------------------------------------------------------------------

void Driver::digest(Digest& d) const {
  auto sorted_keys = [](const auto& map) {
    std::vector<std::uint64_t> keys;
    for (const auto& kv : map)
      keys.push_back(kv.first);
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  d.add("buffers").add(next_bo_).add(rng_.state());
  for (std::uint64_t id : sorted_keys(bos_)) {
    const Bo& b = bos_.at(id);
    d.add(b.id).add(static_cast<std::uint64_t>(b.domain)).add(b.pages).add(b.npa_page);
    d.add(b.refs).add(b.handle_count).add(b.pins).add(b.evicted);
    d.add(b.vram_pages.size());
    for (std::uint64_t p : b.vram_pages)
      d.add(p);
    d.add(b.ualink ? b.ualink->lo : 0).add(b.ualink ? b.ualink->hi : 0);
    for (const Mapping& m : b.mappings)
      d.add(m.process).add(m.va);
    d.add(UINT64_MAX);
  }
  d.add("processes");
  for (const auto& [p, proc] : processes_) {
    d.add(p).add(proc.next_gem).add(static_cast<std::uint64_t>(proc.next_fd));
    for (const auto& [g, bo] : proc.gems)
      d.add(g).add(bo);
    d.add(UINT64_MAX);
    for (const auto& [fd, bo] : proc.fds)
      d.add(static_cast<std::uint64_t>(fd)).add(bo);
    d.add(UINT64_MAX);
  }
  exports_.digest(d);  // "exports", "revoking"
  imports_.digest(d);  // "imports"
  d.add("connections");
  conns_.digest(d);
  d.add("windows");
  for (const auto& [owner, w] : windows_) {
    d.add(owner);
    w.digest(d);
  }
  d.add("work");
  irq_queue_.digest(d);
  cleanup_queue_.digest(d);
}

}  // namespace podsim::driver

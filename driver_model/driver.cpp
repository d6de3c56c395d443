#include "driver_model/driver.hpp"

#include <stdexcept>

namespace podsim::driver {

std::string_view conn_state_name(ConnState s) {
  switch (s) {
    case ConnState::NotReady:
      return "NOT_READY";
    case ConnState::InProgress:
      return "IN_PROGRESS";
    case ConnState::Pending:
      return "PENDING";
    case ConnState::Established:
      return "ESTABLISHED";
  }
  return "?";
}

namespace {
constexpr std::uint64_t kWindowEnd = (1ull << kNpaWindowPageBits) - 1;  // exclusive

Errno errno_of(FailReason r) {
  return r == FailReason::NoSpace ? Errno::NoSpc : Errno::Inval;
}
}  // namespace

Driver::Driver(const DriverConfig& cfg, AccelId self, NpaAddrMode mode, Rng rng, DriverEnv& env)
    : cfg_(cfg), self_(self), mode_(mode), rng_(rng), env_(env), conns_(kMaxAccels) {
  for (std::size_t t = 1; t < kMsgTypes; ++t) {
    std::string n(msg_name(static_cast<MsgType>(t)));
    sent_by_type_.push_back(std::make_unique<Counter>(stats_, "sent." + n, "count",
                                                      "protocol messages of this type sent"));
    received_by_type_.push_back(std::make_unique<Counter>(
        stats_, "received." + n, "count", "protocol messages of this type received"));
  }
}

Driver::~Driver() = default;

// ---- buffer objects --------------------------------------------------------------------------

std::uint64_t Driver::new_bo(Domain d, std::uint64_t pages) {
  std::uint64_t id = next_bo_++;
  Bo& bo = bos_[id];
  bo.id = id;
  bo.domain = d;
  bo.pages = pages;
  return id;
}

GemHandle Driver::new_gem(std::uint64_t bo) {
  GemHandle g = next_gem_++;
  gems_[g] = bo;
  Bo& b = bos_.at(bo);
  ++b.refs;
  ++b.handle_count;
  return g;
}

Fd Driver::new_fd(std::uint64_t bo) {
  Fd fd = next_fd_++;
  files_[fd] = File{bo};
  ++bos_.at(bo).refs;
  return fd;
}

void Driver::unref_bo(std::uint64_t id) {
  auto it = bos_.find(id);
  if (it == bos_.end()) throw std::logic_error("driver: unref of a freed buffer object");
  Bo& bo = it->second;
  if (--bo.refs > 0) return;
  if (bo.domain == Domain::Vram) env_.vram_free(bo.vram_pages);
  bos_.erase(it);
}

Driver::Bo* Driver::bo_of_gem(GemHandle gem) {
  auto it = gems_.find(gem);
  if (it == gems_.end()) return nullptr;
  return &bos_.at(it->second);
}

Result<GemHandle> Driver::gem_create(Bytes bytes, Domain domain) {
  env_.spend(cfg_.ioctl_latency);
  if (domain == Domain::Npa || bytes.count() == 0) return {Errno::Inval, 0};
  const std::uint64_t pages = (bytes.count() + kPageSize - 1) / kPageSize;
  std::uint64_t id = new_bo(domain, pages);
  if (domain == Domain::Vram) {
    auto got = env_.vram_alloc(pages);
    if (!got) {
      bos_.erase(id);
      return {Errno::NoMem, 0};
    }
    bos_[id].vram_pages = std::move(*got);
  }
  return {Errno::Ok, new_gem(id)};
}

Errno Driver::gem_cpu_map(GemHandle gem) {
  env_.spend(cfg_.ioctl_latency);
  Bo* bo = bo_of_gem(gem);
  if (!bo) return Errno::NoEnt;
  if (bo->domain == Domain::Npa) return Errno::Inval;  // remote memory is never CPU-mappable
  return Errno::Ok;
}

Errno Driver::gem_va_map(GemHandle gem, std::uint64_t va, std::uint16_t vmid) {
  env_.spend(cfg_.ioctl_latency);
  Bo* bo = bo_of_gem(gem);
  if (!bo) return Errno::NoEnt;
  if (va % kPageSize != 0) return Errno::Inval;
  if (bo->domain == Domain::Gtt) return Errno::OpNotSupp;  // system memory is not modelled
  const std::uint64_t first = va >> kPageShift;
  for (std::uint64_t i = 0; i < bo->pages; ++i) {
    Pte pte;
    pte.writable = true;
    if (bo->domain == Domain::Vram) {
      pte.target = PteTarget::Vram;
      pte.frame = bo->vram_pages[i];
    } else {
      pte.target = PteTarget::Npa;
      pte.frame = bo->npa_page + i;
    }
    env_.gpuvm_map(vmid, first + i, pte);
  }
  env_.spend(cfg_.pte_update_latency * static_cast<std::int64_t>(bo->pages));
  env_.gpuvm_flush_tlb(vmid);
  env_.spend(cfg_.tlb_flush_latency);
  return Errno::Ok;
}

std::uint32_t Driver::pin_count(GemHandle gem) const {
  auto it = gems_.find(gem);
  if (it == gems_.end()) return 0;
  return bos_.at(it->second).pins;
}

// ---- export ----------------------------------------------------------------------------------

UalinkHandle Driver::new_handle() {
  UalinkHandle h;
  do {
    h.lo = (rng_.next() & ~0x3FFull) | self_;
  } while (h.lo == 0 || exports_.count(h.lo));
  h.hi = rng_.next();
  return h;
}

Result<UalinkHandle> Driver::export_handle(GemHandle gem) {
  const Time t0 = env_.now();
  env_.spend(cfg_.ioctl_latency);
  auto finish = [&](Result<UalinkHandle> r) {
    export_time_.record(env_.now() - t0);
    return r;
  };
  if (!ualink_active_) return finish({Errno::OpNotSupp, {}});
  Bo* bo = bo_of_gem(gem);
  if (!bo) return finish({Errno::NoEnt, {}});
  if (bo->domain != Domain::Vram) return finish({Errno::OpNotSupp, {}});
  if (bo->ualink) {
    exports_repeated_.inc();
    return finish({Errno::Ok, *bo->ualink});
  }
  UalinkHandle h = new_handle();
  ExportNode node;
  node.handle = h;
  node.bo = bo->id;
  node.importers.assign(kMaxAccels, false);
  node.generations.assign(kMaxAccels, 0);
  ++bo->refs;  // the export node holds the buffer
  bo->ualink = h;
  exports_.emplace(h.lo, std::move(node));
  exports_created_.inc();
  return finish({Errno::Ok, h});
}

std::size_t Driver::importer_count(const UalinkHandle& h) const {
  auto it = exports_.find(h.lo);
  if (it == exports_.end()) return 0;
  std::size_t n = 0;
  for (bool b : it->second.importers)
    n += b;
  return n;
}

NpaRangeAllocator& Driver::window(AccelId importer) {
  // Source-aliasing: one window for everyone (the exporter's own). Source-identification:
  // importer I's window, [I<<29 | 512, I<<29 | 0x1FFFFFFF) in the exporter's NPA VM.
  AccelId key = mode_ == NpaAddrMode::SourceAliasing ? self_ : importer;
  auto it = windows_.find(key);
  if (it == windows_.end())
    it = windows_.emplace(key, NpaRangeAllocator(NpaRangeAllocator::kRingPages, kWindowEnd)).first;
  return it->second;
}

const NpaRangeAllocator& Driver::npa_allocator(AccelId window_owner) const {
  return windows_.at(window_owner);
}

void Driver::map_npa_range(const Bo& bo, std::uint64_t key_base) {
  for (std::uint64_t i = 0; i < bo.pages; ++i)
    env_.npa_map(key_base + i, bo.vram_pages[i]);
  env_.spend(cfg_.pte_update_latency * static_cast<std::int64_t>(bo.pages));
  env_.npa_flush_tlb();
  env_.spend(cfg_.tlb_flush_latency);
}

void Driver::on_npa_req(AccelId from, const Message& m) {
  if (conns_[from].state != ConnState::Established) {
    setup(from);  // and drop the request: the importer will time out
    return;
  }
  auto fail = [&](FailReason r) {
    Message f;
    f.type = MsgType::NpaFail;
    f.handle = m.handle;
    f.reason = r;
    send(from, f);
  };
  auto it = exports_.find(m.handle.lo);
  if (it == exports_.end() || it->second.handle.hi != m.handle.hi) {
    fail(FailReason::InvalidHandle);
    return;
  }
  ExportNode& node = it->second;
  Bo& bo = bos_.at(node.bo);
  ++bo.pins;  // once per request

  std::uint64_t window_page = 0;
  if (mode_ == NpaAddrMode::SourceIdentification) {
    if (node.ident_npa.count(from)) {
      --bo.pins;
      fail(FailReason::Duplicate);
      return;
    }
    auto got = window(from).allocate(bo.pages);
    if (!got) {
      --bo.pins;
      fail(FailReason::NoSpace);
      return;
    }
    window_page = *got;
    node.ident_npa[from] = window_page;
    map_npa_range(bo, (static_cast<std::uint64_t>(from) << kNpaWindowPageBits) | window_page);
  } else if (node.shared_npa) {
    window_page = *node.shared_npa;
  } else {
    auto got = window(from).allocate(bo.pages);
    if (!got) {
      --bo.pins;
      fail(FailReason::NoSpace);
      return;
    }
    window_page = *got;
    node.shared_npa = window_page;
    map_npa_range(bo, window_page);
  }

  Message rsp;
  rsp.type = MsgType::NpaRsp;
  rsp.handle = node.handle;
  rsp.size_pages = static_cast<std::uint32_t>(bo.pages);
  rsp.npa_page = static_cast<std::uint32_t>(window_page);
  if (!send(from, rsp)) {
    // Undo everything and send no FAIL.
    --bo.pins;
    if (mode_ == NpaAddrMode::SourceIdentification) {
      for (std::uint64_t i = 0; i < bo.pages; ++i)
        env_.npa_unmap((static_cast<std::uint64_t>(from) << kNpaWindowPageBits) |
                       (window_page + i));
      window(from).free(window_page, bo.pages);
      node.ident_npa.erase(from);
    }
    return;
  }
  if (!node.importers[from]) {
    node.importers[from] = true;
    node.generations[from] = conns_[from].generation;
  }
}

// ---- import ----------------------------------------------------------------------------------

void Driver::import_handle(const UalinkHandle& h, ImportCallback done) {
  const Time t0 = env_.now();
  env_.spend(cfg_.ioctl_latency);
  const AccelId r = h.exporter();
  auto fail_now = [&](Errno e) {
    import_errors_.inc();
    done({e, -1});
  };
  if (!ualink_active_) return fail_now(Errno::OpNotSupp);
  if (r >= cfg_.accel_max) return fail_now(Errno::Inval);

  auto it = imports_.find(h.lo);  // hi is not checked (B5)
  if (it != imports_.end()) {
    switch (it->second.state) {
      case ImportState::NotReady:
      case ImportState::Pending:
        return fail_now(Errno::Again);
      case ImportState::Teardown:
        return fail_now(Errno::Inval);
      case ImportState::Ready: {
        imports_repeated_.inc();
        Fd fd = new_fd(it->second.bo);
        import_repeat_time_.record(env_.now() - t0);
        done({Errno::Ok, fd});
        return;
      }
    }
  }

  ImportNode node;
  node.handle = h;
  node.done = std::move(done);
  node.started = t0;
  ImportNode& n = imports_.emplace(h.lo, std::move(node)).first->second;
  imports_first_.inc();
  switch (setup(r)) {
    case SetupResult::Ready:
      send_request(n);
      break;
    case SetupResult::Waiting:
      n.waiting_connection = true;
      break;
    case SetupResult::Again:
      finish_import(h.lo, Errno::Again);
      break;
    case SetupResult::Failed:
      finish_import(h.lo, Errno::NoSpc);
      break;
  }
}

void Driver::send_request(ImportNode& node) {
  node.waiting_connection = false;
  Message req;
  req.type = MsgType::NpaReq;
  req.handle = node.handle;
  if (!send(node.handle.exporter(), req)) {
    finish_import(node.handle.lo, Errno::NoSpc);
    return;
  }
  node.timer = start_timer(TimerKind::Response, node.handle.lo, cfg_.response_timeout);
}

void Driver::finish_import(std::uint64_t lo, Errno err) {
  auto it = imports_.find(lo);
  if (it == imports_.end()) return;
  ImportNode& node = it->second;
  timers_.erase(node.timer);
  ImportCallback done = std::move(node.done);
  if (err != Errno::Ok) {
    import_errors_.inc();
    imports_.erase(it);
    if (done) done({err, -1});
    return;
  }
  // A buffer object in the NPA domain over [npa, npa + size), no CPU access.
  std::uint64_t bo = new_bo(Domain::Npa, node.size_pages);
  bos_[bo].npa_page = node.npa_page;
  node.bo = bo;
  ++bos_[bo].refs;  // the import node's reference
  node.state = ImportState::Ready;
  Fd fd = new_fd(bo);
  import_time_.record(env_.now() - node.started);
  if (done) done({Errno::Ok, fd});
}

void Driver::on_npa_rsp(AccelId from, const Message& m) {
  if (conns_[from].state != ConnState::Established) {
    setup(from);
    return;
  }
  auto it = imports_.find(m.handle.lo);
  if (it == imports_.end()) return;  // unsolicited
  ImportNode& node = it->second;
  node.npa_page = m.npa_page | (static_cast<std::uint64_t>(from) << kNpaWindowPageBits);
  node.size_pages = m.size_pages;
  if (node.state != ImportState::NotReady) return;
  node.state = ImportState::Pending;
  if (m.npa_page == 0 || m.size_pages == 0) {
    finish_import(m.handle.lo, Errno::Inval);
    return;
  }
  finish_import(m.handle.lo, Errno::Ok);
}

void Driver::on_npa_fail(AccelId from, const Message& m) {
  if (conns_[from].state != ConnState::Established) {
    setup(from);
    return;
  }
  auto it = imports_.find(m.handle.lo);
  if (it == imports_.end() || it->second.state != ImportState::NotReady) return;
  finish_import(m.handle.lo, errno_of(m.reason));
}

Result<GemHandle> Driver::gem_from_fd(Fd fd) {
  env_.spend(cfg_.ioctl_latency);
  auto it = files_.find(fd);
  if (it == files_.end()) return {Errno::Inval, 0};
  return {Errno::Ok, new_gem(it->second.bo)};
}

Errno Driver::close_fd(Fd fd) {
  env_.spend(cfg_.ioctl_latency);
  auto it = files_.find(fd);
  if (it == files_.end()) return Errno::Inval;
  std::uint64_t bo = it->second.bo;
  files_.erase(it);
  unref_bo(bo);  // closing fds never sends RELEASE
  return Errno::Ok;
}

// ---- connections -----------------------------------------------------------------------------

Driver::SetupResult Driver::setup(AccelId peer) {
  Connection& c = conns_[peer];
  switch (c.state) {
    case ConnState::Established:
      return SetupResult::Ready;
    case ConnState::InProgress:
    case ConnState::Pending:
      return SetupResult::Again;
    case ConnState::NotReady:
      break;
  }
  c.state = ConnState::InProgress;
  Message hello;
  hello.type = MsgType::Hello;
  hello.hello_recv = peer;
  hello.hello_sender = self_;
  if (!send(peer, hello)) {
    c.state = ConnState::NotReady;
    return SetupResult::Failed;
  }
  c.timer = start_timer(TimerKind::Hello, peer, cfg_.response_timeout);
  return SetupResult::Waiting;
}

void Driver::established(AccelId peer) {
  Connection& c = conns_[peer];
  c.state = ConnState::Established;
  ++c.generation;
  timers_.erase(c.timer);
  // Wake the imports that were waiting for this connection.
  std::vector<std::uint64_t> waiting;
  for (auto& [lo, node] : imports_)
    if (node.waiting_connection && node.handle.exporter() == peer) waiting.push_back(lo);
  for (std::uint64_t lo : waiting)
    send_request(imports_.at(lo));
}

void Driver::reset_connection(AccelId peer, ConnState to) {
  Connection& c = conns_[peer];
  c.state = to;
  timers_.erase(c.timer);
  // Imports still waiting for this peer fail.
  std::vector<std::uint64_t> waiting;
  for (auto& [lo, node] : imports_)
    if (node.handle.exporter() == peer && node.state == ImportState::NotReady)
      waiting.push_back(lo);
  for (std::uint64_t lo : waiting)
    finish_import(lo, Errno::TimedOut);
}

void Driver::on_hello(AccelId from, const Message& m) {
  if (m.hello_recv != self_ || m.hello_sender != from || from >= cfg_.accel_max) return;
  Connection& c = conns_[from];
  if (c.state == ConnState::NotReady || c.state == ConnState::Established)
    c.state = ConnState::Pending;
  Message ack;
  ack.type = MsgType::HelloAck;
  if (!send(from, ack)) {
    c.state = ConnState::NotReady;
    return;
  }
  established(from);
}

void Driver::on_hello_ack(AccelId from) {
  if (conns_[from].state != ConnState::InProgress) return;
  established(from);
}

// ---- messages and timers ---------------------------------------------------------------------

bool Driver::send(AccelId dst, const Message& m) {
  if (!env_.send(dst, encode(m))) {
    ring_full_.inc();
    return false;
  }
  sent_by_type_[static_cast<std::size_t>(m.type) - 1]->inc();
  return true;
}

void Driver::on_message(AccelId from, const Dwords& dw) {
  env_.spend(cfg_.irq_handler_latency);
  Message m;
  if (!decode(dw, from, self_, m)) return;
  received_by_type_[static_cast<std::size_t>(m.type) - 1]->inc();
  switch (m.type) {
    case MsgType::Hello:
      on_hello(from, m);
      break;
    case MsgType::HelloAck:
      on_hello_ack(from);
      break;
    case MsgType::NpaReq:
      on_npa_req(from, m);
      break;
    case MsgType::NpaRsp:
      on_npa_rsp(from, m);
      break;
    case MsgType::NpaFail:
      on_npa_fail(from, m);
      break;
    case MsgType::NpaRevoke:
    case MsgType::NpaRelease:
      break;  // revoke and release: see the driver-model issue
  }
}

std::uint64_t Driver::start_timer(TimerKind kind, std::uint64_t subject, Time delay) {
  std::uint64_t token = next_timer_++;
  timers_[token] = {kind, subject};
  env_.start_timer(token, delay);
  return token;
}

void Driver::on_timer(std::uint64_t token) {
  auto it = timers_.find(token);
  if (it == timers_.end()) return;  // cancelled
  auto [kind, subject] = it->second;
  timers_.erase(it);
  if (kind == TimerKind::Hello) {
    auto peer = static_cast<AccelId>(subject);
    if (conns_[peer].state == ConnState::InProgress) reset_connection(peer, ConnState::NotReady);
  } else {
    auto node = imports_.find(subject);
    if (node == imports_.end() || node->second.state != ImportState::NotReady) return;
    AccelId peer = node->second.handle.exporter();
    finish_import(subject, Errno::TimedOut);
    reset_connection(peer, ConnState::NotReady);
  }
}

}  // namespace podsim::driver

#include "models/compute/collective.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

namespace podsim::coll {

namespace {
constexpr std::uint64_t kLine = 64;
constexpr std::uint64_t kMaxAccess = 256;  // no access crosses a boundary of this
std::uint64_t round_up(std::uint64_t v, std::uint64_t to) {
  return (v + to - 1) / to * to;
}
}  // namespace

std::uint64_t Shape::piece_bytes() const {
  return std::max<std::uint64_t>(kLine, piece / kLine * kLine);
}

std::string invalid(Op op, Algorithm alg) {
  if (alg == Algorithm::TwoShot && op != Op::AllReduce)
    return "two_shot is an all_reduce algorithm";
  if (alg == Algorithm::Ring && (op == Op::AllToAll || op == Op::AllToAllV))
    return "all_to_all and all_to_all_v run one_shot (every participant stores into every peer)";
  return {};
}

std::string invalid_size(Op op, std::uint32_t n, std::uint64_t bytes) {
  if (bytes == 0 || bytes % kLine != 0) return "a size must be a positive multiple of 64 B";
  if (op == Op::AllToAll && bytes % (kLine * n) != 0)
    return "all_to_all: a size must be a multiple of 64 B x the participants (" +
           std::to_string(kLine * n) + " B)";
  return {};
}

// ---- shapes ----------------------------------------------------------------------------------

std::uint64_t Shape::chunk_offset(std::uint32_t c) const {
  const std::uint64_t lines = bytes / kLine;
  return lines * c / n * kLine;
}

std::uint64_t Shape::block(std::uint32_t i, std::uint32_t j) const {
  return op == Op::AllToAllV ? blocks[static_cast<std::size_t>(i) * n + j] : bytes / n;
}
std::uint64_t Shape::block_in(std::uint32_t i, std::uint32_t j) const {
  std::uint64_t off = 0;
  for (std::uint32_t k = 0; k < j; ++k)
    off += block(i, k);
  return off;
}
std::uint64_t Shape::block_out(std::uint32_t i, std::uint32_t j) const {
  std::uint64_t off = 0;
  for (std::uint32_t k = 0; k < i; ++k)
    off += block(k, j);
  return off;
}

std::uint64_t Shape::input_bytes(std::uint32_t r) const {
  switch (op) {
    case Op::AllToAllV: return block_in(r, n);
    case Op::AllGather: return chunk_bytes(r);
    case Op::Broadcast: return r == root ? bytes : 0;
    default: return bytes;
  }
}

std::uint64_t Shape::output_bytes(std::uint32_t r) const {
  return op == Op::ReduceScatter ? chunk_bytes(r) : op == Op::AllToAllV ? block_out(n, r) : bytes;
}

std::uint64_t Shape::scratch_bytes() const {
  return (op == Op::AllReduce || op == Op::ReduceScatter) && alg == Algorithm::Ring ? bytes : 0;
}

namespace {
// Participant r's base data: element e.
float base(std::uint32_t r, std::uint64_t e) {
  return static_cast<float>((e * 7 + static_cast<std::uint64_t>(r) * 13) % 61 + 1);
}
}  // namespace

void Shape::input_at(std::uint32_t r, std::uint64_t offset, float* out, std::size_t count) const {
  const std::uint64_t shift = op == Op::AllGather ? chunk_offset(r) : 0;
  for (std::size_t k = 0; k < count; ++k)
    out[k] = base(r, (shift + offset) / 4 + k);
}

void Shape::output_at(std::uint32_t r, std::uint64_t offset, float* out, std::size_t count) const {
  if (op == Op::AllToAll || op == Op::AllToAllV) {
    // Block `from` of r's output came from participant `from`: found once, then followed.
    std::uint32_t from = 0;
    std::uint64_t begin = 0;                // where block `from` begins in r's output
    std::uint64_t source = block_in(0, r);  // and where it is in `from`'s input
    for (std::size_t k = 0; k < count; ++k) {
      const std::uint64_t at = offset + 4 * k;
      while (from + 1 < n && begin + block(from, r) <= at) {
        begin += block(from, r);
        source = block_in(++from, r);
      }
      out[k] = base(from, (source + at - begin) / 4);
    }
    return;
  }
  std::uint32_t owner = 0;  // all_gather: whose share the element is in (followed, as above)
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint64_t at = offset + 4 * k;
    float v = 0;
    switch (op) {
      case Op::AllReduce:
        for (std::uint32_t q = 0; q < n; ++q)
          v += base(q, at / 4);
        break;
      case Op::ReduceScatter:
        for (std::uint32_t q = 0; q < n; ++q)
          v += base(q, (chunk_offset(r) + at) / 4);
        break;
      case Op::AllGather:
        while (owner + 1 < n && chunk_offset(owner + 1) <= at)
          ++owner;
        v = base(owner, at / 4);
        break;
      case Op::AllToAll:
      case Op::AllToAllV: break;  // above
      case Op::Broadcast: v = base(root, at / 4); break;
    }
    out[k] = v;
  }
}

double Shape::bus_factor() const {
  const double d = n;
  switch (op) {
    case Op::AllReduce: return 2 * (d - 1) / d;
    case Op::AllGather:
    case Op::ReduceScatter:
    case Op::AllToAll:
    case Op::AllToAllV: return (d - 1) / d;
    case Op::Broadcast: return 1;
  }
  return 1;
}

// ---- programs --------------------------------------------------------------------------------

std::vector<std::uint32_t> Program::peers() const {
  std::set<std::uint32_t> all;
  for (const Step& s : steps) {
    if (s.kind == Step::Kind::Fence) continue;
    all.insert(s.dst.rank);
    if (s.has_dst2) all.insert(s.dst2.rank);
  }
  for (const Ref& r : srcs)
    all.insert(r.rank);
  return {all.begin(), all.end()};
}

std::uint32_t Program::flag_slots() const {
  std::uint32_t slots = 0;
  for (const Step& s : steps)
    if (s.kind == Step::Kind::Signal || s.kind == Step::Kind::Wait)
      slots =
          std::max<std::uint32_t>(slots, static_cast<std::uint32_t>(s.dst.offset / kFlagBytes) + 1);
  return slots;
}

namespace {

// Appends steps to one participant's program.
class Writer {
 public:
  explicit Writer(Program& p) : p_(p) {}
  void copy(Ref src, Ref dst, std::uint64_t bytes, std::optional<Ref> dst2 = std::nullopt) {
    data(Step::Kind::Copy, {src}, dst, bytes, dst2);
  }
  void reduce(const std::vector<Ref>& srcs, Ref dst, std::uint64_t bytes,
              std::optional<Ref> dst2 = std::nullopt) {
    data(Step::Kind::Reduce, srcs, dst, bytes, dst2);
  }
  void signal(std::uint32_t rank, std::uint32_t slot) { flag(Step::Kind::Signal, rank, slot); }
  void wait(std::uint32_t rank, std::uint32_t slot) { flag(Step::Kind::Wait, rank, slot); }
  void fence() {
    Step s;
    s.kind = Step::Kind::Fence;
    p_.steps.push_back(s);
  }
  void plain(Step::Kind k, Ref dst, std::uint64_t bytes) {
    if (bytes == 0) return;
    Step s;
    s.kind = k;
    s.dst = dst;
    s.bytes = bytes;
    p_.steps.push_back(s);
  }

 private:
  void data(Step::Kind k, const std::vector<Ref>& srcs, Ref dst, std::uint64_t bytes,
            std::optional<Ref> dst2) {
    if (bytes == 0) return;
    Step s;
    s.kind = k;
    s.bytes = bytes;
    s.dst = dst;
    if (dst2) s.has_dst2 = true, s.dst2 = *dst2;
    s.src_begin = static_cast<std::uint32_t>(p_.srcs.size());
    s.src_count = static_cast<std::uint32_t>(srcs.size());
    p_.srcs.insert(p_.srcs.end(), srcs.begin(), srcs.end());
    p_.steps.push_back(s);
  }
  void flag(Step::Kind k, std::uint32_t rank, std::uint32_t slot) {
    Step s;
    s.kind = k;
    s.dst = Ref{rank, Region::Flags, static_cast<std::uint64_t>(slot) * kFlagBytes};
    p_.steps.push_back(s);
  }
  Program& p_;
};

Ref at(std::uint32_t rank, Region r, std::uint64_t off) {
  return Ref{rank, r, off};
}

// Pieces of [off, off + len): the pipelining unit of a ring, each a multiple of 64 B.
struct Pieces {
  std::uint64_t off, len, piece;
  std::uint32_t count() const {
    return len == 0 ? 0 : static_cast<std::uint32_t>((len + piece - 1) / piece);
  }
  std::uint64_t offset(std::uint32_t p) const { return off + p * piece; }
  std::uint64_t bytes(std::uint32_t p) const { return std::min(piece, len - p * piece); }
};

// Ring all_reduce / reduce_scatter / all_gather.
void ring(const Shape& s, std::vector<Program>& progs) {
  const std::uint32_t n = s.n;
  const std::uint64_t piece = s.piece_bytes();
  std::uint32_t per_chunk = 0;  // pieces in the largest chunk: flag slots per step
  for (std::uint32_t c = 0; c < n; ++c)
    per_chunk = std::max(per_chunk, Pieces{0, s.chunk_bytes(c), piece}.count());
  const std::uint32_t rs_base = kBarrierSlots;
  const std::uint32_t ag_base = rs_base + (s.op == Op::AllGather ? 0 : (n - 1) * per_chunk);
  auto chunk = [&](std::uint32_t c) { return Pieces{s.chunk_offset(c), s.chunk_bytes(c), piece}; };
  for (std::uint32_t i = 0; i < n; ++i) {
    Writer w(progs[i]);
    const std::uint32_t next = (i + 1) % n;
    if (s.op != Op::AllGather) {
      // Reduce-scatter: at step t, send the partial sum of chunk i - t - 1 to the next; after
      // n - 1 steps participant i holds chunk i summed over everyone.
      for (std::uint32_t t = 0; t + 1 < n; ++t) {
        const std::uint32_t c = (i + 2 * n - t - 1) % n;
        const Pieces ch = chunk(c);
        for (std::uint32_t p = 0; p < ch.count(); ++p) {
          const std::uint64_t o = ch.offset(p), b = ch.bytes(p);
          if (t == 0) {
            w.copy(at(i, Region::Input, o), at(next, Region::Scratch, o), b);
          } else {
            w.wait(i, rs_base + (t - 1) * per_chunk + p);
            w.reduce({at(i, Region::Scratch, o), at(i, Region::Input, o)},
                     at(next, Region::Scratch, o), b);
          }
          w.signal(next, rs_base + t * per_chunk + p);
        }
      }
      const Pieces own = chunk(i);
      for (std::uint32_t p = 0; p < own.count(); ++p) {
        const std::uint64_t o = own.offset(p), b = own.bytes(p);
        w.wait(i, rs_base + (n - 2) * per_chunk + p);
        const std::vector<Ref> srcs{at(i, Region::Scratch, o), at(i, Region::Input, o)};
        if (s.op == Op::ReduceScatter) {
          w.reduce(srcs, at(i, Region::Output, o - own.off), b);
        } else {  // all_reduce: into the output, and on to the next as the all-gather's first step
          w.reduce(srcs, at(i, Region::Output, o), b, at(next, Region::Output, o));
          w.signal(next, ag_base + p);
        }
      }
      if (s.op == Op::ReduceScatter) {
        w.fence();
        continue;
      }
    } else {
      // All-gather's first step: the input into the own output and the next's.
      const Pieces own = chunk(i);
      for (std::uint32_t p = 0; p < own.count(); ++p) {
        const std::uint64_t o = own.offset(p), b = own.bytes(p);
        w.copy(at(i, Region::Input, o - own.off), at(i, Region::Output, o), b,
               at(next, Region::Output, o));
        w.signal(next, ag_base + p);
      }
    }
    // All-gather: at step t, forward chunk i - t (which the previous participant stored here)
    // to the next.
    for (std::uint32_t t = 1; t + 1 < n; ++t) {
      const Pieces ch = chunk((i + n - t) % n);
      for (std::uint32_t p = 0; p < ch.count(); ++p) {
        const std::uint64_t o = ch.offset(p), b = ch.bytes(p);
        w.wait(i, ag_base + (t - 1) * per_chunk + p);
        w.copy(at(i, Region::Output, o), at(next, Region::Output, o), b);
        w.signal(next, ag_base + t * per_chunk + p);
      }
    }
    const Pieces last = chunk((i + 1) % n);
    for (std::uint32_t p = 0; p < last.count(); ++p)
      w.wait(i, ag_base + (n - 2) * per_chunk + p);
    w.fence();
  }
}

void one_shot(const Shape& s, std::vector<Program>& progs) {
  const std::uint32_t n = s.n;
  for (std::uint32_t i = 0; i < n; ++i) {
    Writer w(progs[i]);
    // Peers in turn from the next one, so that they do not all start at the same GPU.
    auto peer = [&](std::uint32_t k) { return (i + k) % n; };
    switch (s.op) {
      case Op::AllReduce:
      case Op::ReduceScatter: {
        const std::uint64_t off = s.op == Op::AllReduce ? 0 : s.chunk_offset(i);
        const std::uint64_t len = s.op == Op::AllReduce ? s.bytes : s.chunk_bytes(i);
        std::vector<Ref> srcs;
        for (std::uint32_t k = 0; k < n; ++k)
          srcs.push_back(at(peer(k), Region::Input, off));
        w.reduce(srcs, at(i, Region::Output, 0), len);
        break;
      }
      case Op::AllGather:
        for (std::uint32_t k = 0; k < n; ++k)
          w.copy(at(peer(k), Region::Input, 0), at(i, Region::Output, s.chunk_offset(peer(k))),
                 s.chunk_bytes(peer(k)));
        break;
      case Op::AllToAll:
      case Op::AllToAllV: {
        // To every peer at once (as many thread blocks would): piece p of each block in turn,
        // so that every receive side hears from every sender all along; then the flags.
        const std::uint64_t piece = s.piece_bytes();
        std::uint64_t longest = 0;
        for (std::uint32_t k = 1; k < n; ++k)
          longest = std::max(longest, s.block(i, peer(k)));
        for (std::uint64_t o = 0; o < longest; o += piece)
          for (std::uint32_t k = 1; k < n; ++k) {
            const std::uint32_t j = peer(k);
            if (o >= s.block(i, j)) continue;
            w.copy(at(i, Region::Input, s.block_in(i, j) + o),
                   at(j, Region::Output, s.block_out(i, j) + o),
                   std::min(piece, s.block(i, j) - o));
          }
        for (std::uint32_t k = 1; k < n; ++k)
          w.signal(peer(k), kBarrierSlots + i);
        w.copy(at(i, Region::Input, s.block_in(i, i)), at(i, Region::Output, s.block_out(i, i)),
               s.block(i, i));
        for (std::uint32_t k = 1; k < n; ++k)
          w.wait(i, kBarrierSlots + peer(n - k));
        break;
      }
      case Op::Broadcast:
        w.copy(at(s.root, Region::Input, 0), at(i, Region::Output, 0), s.bytes);
        break;
    }
    w.fence();
  }
}

void two_shot(const Shape& s, std::vector<Program>& progs) {
  const std::uint32_t n = s.n;
  for (std::uint32_t i = 0; i < n; ++i) {
    Writer w(progs[i]);
    auto peer = [&](std::uint32_t k) { return (i + k) % n; };
    std::vector<Ref> srcs;
    for (std::uint32_t k = 0; k < n; ++k)
      srcs.push_back(at(peer(k), Region::Input, s.chunk_offset(i)));
    w.reduce(srcs, at(i, Region::Output, s.chunk_offset(i)), s.chunk_bytes(i));
    for (std::uint32_t k = 1; k < n; ++k)
      w.signal(peer(k), kBarrierSlots + i);
    for (std::uint32_t k = 1; k < n; ++k) {
      const std::uint32_t j = peer(k);
      w.wait(i, kBarrierSlots + j);
      w.copy(at(j, Region::Output, s.chunk_offset(j)), at(i, Region::Output, s.chunk_offset(j)),
             s.chunk_bytes(j));
    }
    w.fence();
  }
}

void ring_broadcast(const Shape& s, std::vector<Program>& progs) {
  const std::uint32_t n = s.n;
  const std::uint64_t piece = s.piece_bytes();
  const Pieces all{0, s.bytes, piece};
  for (std::uint32_t i = 0; i < n; ++i) {
    Writer w(progs[i]);
    const std::uint32_t pos = (i + n - s.root) % n, next = (i + 1) % n;
    for (std::uint32_t p = 0; p < all.count(); ++p) {
      const std::uint64_t o = all.offset(p), b = all.bytes(p);
      if (pos == 0) {
        w.copy(at(i, Region::Input, o), at(i, Region::Output, o), b, at(next, Region::Output, o));
      } else {
        w.wait(i, kBarrierSlots + p);
        if (pos + 1 == n) continue;
        w.copy(at(i, Region::Output, o), at(next, Region::Output, o), b);
      }
      w.signal(next, kBarrierSlots + p);
    }
    w.fence();
  }
}

}  // namespace

std::string invalid_blocks(std::uint32_t n, const std::vector<std::uint64_t>& blocks) {
  if (blocks.size() != static_cast<std::size_t>(n) * n)
    return "needs " + std::to_string(static_cast<std::uint64_t>(n) * n) +
           " sizes (participants x participants, row by sender), not " +
           std::to_string(blocks.size());
  for (std::uint64_t b : blocks)
    if (b % kLine != 0) return "every size must be a multiple of 64 B";
  return {};
}

std::vector<Program> build(const Shape& s) {
  if (const std::string e = invalid(s.op, s.alg); !e.empty()) throw std::invalid_argument(e);
  if (const std::string e =
          s.op == Op::AllToAllV ? invalid_blocks(s.n, s.blocks) : invalid_size(s.op, s.n, s.bytes);
      !e.empty())
    throw std::invalid_argument(e);
  if (s.n < 2) throw std::invalid_argument("a collective needs at least 2 participants");
  std::vector<Program> progs(s.n);
  if (s.op == Op::Broadcast && s.alg == Algorithm::Ring)
    ring_broadcast(s, progs);
  else if (s.alg == Algorithm::Ring)
    ring(s, progs);
  else if (s.alg == Algorithm::TwoShot)
    two_shot(s, progs);
  else
    one_shot(s, progs);
  return progs;
}

std::vector<Program> build_send(const Shape& s) {
  if (s.op != Op::Broadcast || s.n != 2 || s.root != 0)
    throw std::invalid_argument("a send is a broadcast from participant 0 over 2");
  if (const std::string e = invalid_size(s.op, s.n, s.bytes); !e.empty())
    throw std::invalid_argument(e);
  std::vector<Program> progs(2);
  Writer send(progs[0]);
  send.copy(at(0, Region::Input, 0), at(1, Region::Output, 0), s.bytes);
  send.signal(1, kBarrierSlots);
  send.fence();
  Writer recv(progs[1]);
  recv.wait(1, kBarrierSlots);
  recv.fence();
  return progs;
}

Program barrier(std::uint32_t n, std::uint32_t rank) {
  Program p;
  Writer w(p);
  std::uint32_t k = 0;
  for (std::uint32_t d = 1; d < n; d *= 2, ++k) {
    w.signal((rank + d) % n, k);
    w.wait(rank, k);
  }
  w.fence();
  return p;
}

Program fill(const Shape& s, std::uint32_t r) {
  Program p;
  Writer w(p);
  w.plain(Step::Kind::Fill, at(r, Region::Input, 0), s.input_bytes(r));
  w.plain(Step::Kind::Fill, at(r, Region::Output, 0), s.output_bytes(r));
  w.fence();
  return p;
}

Program check(const Shape& s, std::uint32_t r) {
  Program p;
  Writer w(p);
  w.plain(Step::Kind::Check, at(r, Region::Output, 0), s.output_bytes(r));
  w.fence();
  return p;
}

Layout Layout::covering(std::span<const Shape> shapes, std::uint32_t flags) {
  constexpr std::uint64_t kPage = 4096;
  flags = std::max(flags, kBarrierSlots);
  std::uint64_t in = 0, out = 0, scratch = 0;
  for (const Shape& s : shapes) {
    for (std::uint32_t r = 0; r < s.n; ++r) {
      in = std::max(in, s.input_bytes(r));
      out = std::max(out, s.output_bytes(r));
    }
    scratch = std::max(scratch, s.scratch_bytes());
  }
  Layout l;
  l.input = round_up(flags * kFlagBytes, kPage);
  l.output = l.input + round_up(in, kPage);
  l.scratch = l.output + round_up(out, kPage);
  l.window = l.scratch + round_up(std::max<std::uint64_t>(scratch, 1), kPage);
  return l;
}

// ---- the runner ------------------------------------------------------------------------------

Runner::Runner(Env env) : env_(std::move(env)) {
  if (env_.access_size < kLine || env_.access_size > kMaxAccess || env_.access_size % kLine)
    throw std::invalid_argument("collective access size must be 64, 128, 192 or 256 bytes");
  if (env_.outstanding == 0) throw std::invalid_argument("collective outstanding must be >= 1");
  slots_.resize(env_.outstanding);
  data_.resize(env_.outstanding);
  for (std::uint32_t i = env_.outstanding; i-- > 0;)
    free_.push_back(i);
  loading_.reset(env_.outstanding);
  storing_.reset(env_.outstanding);
  computing_.reset(env_.outstanding);
}

std::uint64_t Runner::va(const Ref& r) const {
  const std::uint64_t base = r.rank < env_.window_va.size() ? env_.window_va[r.rank] : 0;
  if (base == 0)
    throw std::logic_error("collective: participant " + std::to_string(env_.rank) +
                           " reaches into participant " + std::to_string(r.rank) +
                           "'s window, which it has not mapped");
  return base + env_.layout.offset(r.region) + r.offset;
}

void Runner::start(const Program& prog, std::uint64_t value, const Shape* shape, Time now) {
  prog_ = &prog;
  shape_ = shape;
  value_ = value;
  cur_ = 0;
  cur_offset_ = 0;
  data_prefix_ = 0;
  open_.assign(prog.steps.size(), 0);
  signals_open_ = 0;
  pending_signals_.reset(prog.steps.size() + 1);
  waiting_ = false;
  poll_in_flight_ = false;
  advance(now);
}

bool Runner::done() const {
  if (!prog_ || in_flight_ != 0) return false;
  return failed_ ||
         (cur_ == prog_->steps.size() && signals_open_ == 0 && free_.size() == slots_.size());
}

Time Runner::wake_at() const {
  Time t = Time::max();
  if (in_flight_ >= env_.outstanding || failed_) return t;  // a completion comes first
  if (!computing_.empty()) t = std::min(t, slots_[computing_.front()].ready);
  if (waiting_ && !poll_in_flight_) t = std::min(t, poll_due_);
  return t;
}

// Moves cur_ past what needs no more issuing: signals (registered), waits satisfied, fences
// reached with everything before them complete, data steps with every granule made.
void Runner::settle_prefix() {
  while (data_prefix_ < cur_ &&
         (open_[data_prefix_] == 0 || step(data_prefix_).kind == Step::Kind::Signal))
    ++data_prefix_;
}

void Runner::advance(Time now) {
  if (failed_) return;
  settle_prefix();
  while (cur_ < prog_->steps.size()) {
    const Step& s = step(cur_);
    if (s.kind == Step::Kind::Signal) {
      open_[cur_] = 1;
      ++signals_open_;
      pending_signals_.push(cur_);
    } else if (s.kind == Step::Kind::Wait) {
      if (!waiting_) {
        waiting_ = true;
        poll_due_ = now;
      }
      return;  // the poll that finds the flag set moves on
    } else if (s.kind == Step::Kind::Fence) {
      if (data_prefix_ < cur_ || signals_open_ > 0) return;
    } else if (cur_offset_ < s.bytes) {
      return;  // granules still to make
    }
    ++cur_;
    cur_offset_ = 0;
    settle_prefix();
  }
}

void Runner::issue_load(Slot& s, std::uint32_t slot, Request& out) {
  const Step& st = step(s.step);
  const Ref src =
      st.kind == Step::Kind::Check ? st.dst : prog_->srcs[st.src_begin + s.loads_issued];
  Ref r = src;
  r.offset += s.offset;
  out = Request{};
  out.va = va(r);
  out.size = s.size;
  out.token = slot;
  ++s.loads_issued;
  ++in_flight_;
}

bool Runner::issue_store(Slot& s, std::uint32_t slot, Request& out) {
  const Step& st = step(s.step);
  Ref r = s.stores_issued == 0 ? st.dst : st.dst2;
  r.offset += s.offset;
  out = Request{};
  out.store = true;
  out.va = va(r);
  out.size = s.size;
  out.data = reinterpret_cast<const unsigned char*>(data_[slot].data());  // kept until it completes
  out.token = slot;
  ++s.stores_issued;
  ++in_flight_;
  return s.stores_issued < stores_of(st);
}

bool Runner::next(Time now, Request& out) {
  if (!prog_ || failed_) return false;
  if (in_flight_ >= env_.outstanding) return false;
  // 1. A flag whose data has all completed.
  if (!pending_signals_.empty() && data_prefix_ >= pending_signals_.front()) {
    const std::uint32_t k = pending_signals_.front();
    pending_signals_.pop();
    out = Request{};
    out.store = true;
    out.sync = true;
    out.va = va(step(k).dst);
    out.size = static_cast<std::uint32_t>(kFlagBytes);
    std::memcpy(flag_.data(), &value_, sizeof value_);  // the rest stays zero
    out.data = flag_.data();
    out.token = kSignalBit | k;
    ++in_flight_;
    return true;
  }
  // 2. Granules whose data is ready to store.
  while (!computing_.empty() && slots_[computing_.front()].ready <= now) {
    const std::uint32_t k = computing_.front();
    computing_.pop();
    slots_[k].state = SlotState::Storing;
    storing_.push(k);
  }
  if (!storing_.empty()) {
    const std::uint32_t k = storing_.front();
    if (!issue_store(slots_[k], k, out)) storing_.pop();
    return true;
  }
  // 3. Granules with loads to issue.
  if (!loading_.empty()) {
    const std::uint32_t k = loading_.front();
    Slot& s = slots_[k];
    issue_load(s, k, out);
    const Step& st = step(s.step);
    const std::uint32_t loads = loads_of(st);
    if (s.loads_issued == loads) loading_.pop();
    return true;
  }
  // 4. A wait's poll.
  if (waiting_) {
    if (poll_in_flight_ || poll_due_ > now) return false;
    poll_in_flight_ = true;
    out = Request{};
    out.sync = true;
    out.va = va(step(cur_).dst);
    out.size = static_cast<std::uint32_t>(kFlagBytes);
    out.token = kPollToken;
    ++in_flight_;
    return true;
  }
  // 5. A new granule of the current step.
  if (cur_ >= prog_->steps.size() || free_.empty()) return false;
  const Step& st = step(cur_);
  if (st.kind == Step::Kind::Fence || st.kind == Step::Kind::Signal) return false;
  const std::uint32_t k = free_.back();
  free_.pop_back();
  Slot& s = slots_[k];
  s = Slot{};
  s.step = cur_;
  s.offset = cur_offset_;
  // A granule never crosses a 256-byte boundary of any address it touches (a GPU's loads and
  // stores stay within a line, so within a page): shares that start mid-line, and 192-byte
  // accesses, go in smaller pieces where a line ends.
  std::uint64_t len = std::min<std::uint64_t>(env_.access_size, st.bytes - cur_offset_);
  auto room = [&](const Ref& r) {
    Ref at = r;
    at.offset += cur_offset_;
    return kMaxAccess - va(at) % kMaxAccess;
  };
  len = std::min(len, room(st.dst));
  if (st.has_dst2) len = std::min(len, room(st.dst2));
  for (std::uint32_t i = 0; i < st.src_count; ++i)
    len = std::min(len, room(prog_->srcs[st.src_begin + i]));
  s.size = static_cast<std::uint32_t>(len);
  cur_offset_ += s.size;
  ++open_[cur_];
  advance(now);
  if (st.kind == Step::Kind::Fill) {
    // The input's data, or (the output) a pattern no call leaves: straight to the store.
    if (shape_ && st.dst.region == Region::Output)
      std::memset(data_[k].data(), 0xFF, s.size);  // a NaN in every element
    else if (shape_)
      shape_->input_at(env_.rank, s.offset + st.dst.offset, data_[k].data(), s.size / 4);
    s.state = SlotState::Storing;
    if (!issue_store(s, k, out)) return true;
    storing_.push(k);
    return true;
  }
  s.state = SlotState::Loading;
  issue_load(s, k, out);
  const std::uint32_t loads = loads_of(st);
  if (s.loads_issued < loads) loading_.push(k);
  return true;
}

void Runner::finish_loads(std::uint32_t k, Time now) {
  Slot& s = slots_[k];
  const Step& st = step(s.step);
  if (st.kind == Step::Kind::Check) {
    if (shape_) {  // (without one, functional data is off: the loads alone, for their time)
      std::array<float, 64> want{};
      shape_->output_at(env_.rank, st.dst.offset + s.offset, want.data(), s.size / 4);
      for (std::uint32_t e = 0; e < s.size / 4; ++e)
        wrong_ += std::memcmp(&want[e], &data_[k][e], 4) != 0;
      checked_ += s.size / 4;
    }
    granule_done(k);
    return;
  }
  Time ready = now;
  if (st.kind == Step::Kind::Reduce) {
    const auto ps = static_cast<std::int64_t>(env_.reduce_ps_per_byte *
                                              static_cast<double>(s.size) * st.src_count);
    compute_free_ = std::max(compute_free_, now) + Time::ps(ps);
    ready = compute_free_;
  }
  s.ready = ready;
  s.state = SlotState::Computing;
  computing_.push(k);
}

void Runner::granule_done(std::uint32_t k) {
  Slot& s = slots_[k];
  --open_[s.step];
  s.state = SlotState::Free;
  free_.push_back(k);
}

void Runner::completed(std::uint32_t token, const unsigned char* data, Time now) {
  --in_flight_;
  if (!data) failed_ = true;
  if (token == kPollToken) {
    poll_in_flight_ = false;
    std::uint64_t got = 0;
    if (data) std::memcpy(&got, data, sizeof got);
    if (got >= value_ && waiting_) {
      waiting_ = false;
      ++cur_;
      cur_offset_ = 0;
    } else {
      poll_due_ = now + env_.poll_interval;
    }
  } else if (token & kSignalBit) {
    const std::uint32_t k = token & ~kSignalBit;
    open_[k] = 0;
    --signals_open_;
  } else {
    Slot& s = slots_[token];
    if (s.state == SlotState::Loading) {
      const Step& st = step(s.step);
      if (data) {
        if (s.loads_done == 0 || st.kind != Step::Kind::Reduce) {
          std::memcpy(data_[token].data(), data, s.size);
        } else {
          float in[64];
          std::memcpy(in, data, s.size);
          for (std::uint32_t e = 0; e < s.size / 4; ++e)
            data_[token][e] += in[e];
        }
      }
      const std::uint32_t loads = loads_of(st);
      if (++s.loads_done == loads) finish_loads(token, now);
    } else {
      const Step& st = step(s.step);
      if (++s.stores_done == stores_of(st)) granule_done(token);
    }
  }
  if (!failed_) advance(now);
}

}  // namespace podsim::coll

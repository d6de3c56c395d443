// Collectives over load/store (models/compute/collective): the algorithms' programs run by
// their executors against a plain memory whose accesses take random times and complete out of
// order, so a program that reads before the data it needs has landed gets wrong sums.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <queue>
#include <random>

#include "models/compute/collective.hpp"

using namespace podsim;
using namespace podsim::coll;

namespace {

// Room for the shapes' programs' flags and regions.
Layout layout_for(const std::vector<Shape>& shapes) {
  std::uint32_t flags = 0;
  for (const Shape& s : shapes)
    for (const Program& p : build(s))
      flags = std::max(flags, p.flag_slots());
  return Layout::covering(shapes, flags);
}

// N executors over N windows of plain memory. An access is served (a store lands, a load
// reads) a random time after it is issued and completes a random time after that; one in 16
// takes up to 50 times longer than the rest.
class Harness {
 public:
  Harness(std::vector<Shape> shapes, std::uint32_t n, std::uint32_t access_size,
          std::uint32_t outstanding, std::uint64_t seed)
      : shapes_(std::move(shapes)),
        layout_(layout_for(shapes_)),
        rng_(seed),
        access_size_(access_size) {
    for (std::uint32_t r = 0; r < n; ++r) {
      mem_.emplace_back(layout_.window, 0);
      Runner::Env env;
      env.rank = r;
      for (std::uint32_t q = 0; q < n; ++q)
        env.window_va.push_back(base(q));
      env.layout = layout_;
      env.access_size = access_size;
      env.outstanding = outstanding;
      env.reduce_ps_per_byte = 1;
      runners_.emplace_back(env);
    }
  }
  static std::uint64_t base(std::uint32_t r) { return (std::uint64_t{r} + 1) << 40; }

  // Each rank runs, for each shape: fill, then `calls` times a barrier and the call, then a
  // check. Returns the elements checked and those wrong, over all ranks.
  std::pair<std::uint64_t, std::uint64_t> run(
      std::uint32_t calls, const std::function<void(std::vector<Program>&)>& tamper = {}) {
    const std::uint32_t n = static_cast<std::uint32_t>(runners_.size());
    std::vector<std::vector<std::pair<const Program*, std::uint64_t>>> todo(n);
    std::uint64_t value = 0;
    for (const Shape& s : shapes_) {
      auto body = build(s);
      if (tamper) tamper(body);
      bodies_.push_back(std::move(body));
      for (std::uint32_t r = 0; r < n; ++r) {
        owned_.push_back(std::make_unique<Program>(fill(s, r)));
        todo[r].push_back({owned_.back().get(), 0});
      }
      for (std::uint32_t c = 0; c < calls; ++c) {
        ++value;
        for (std::uint32_t r = 0; r < n; ++r) {
          owned_.push_back(std::make_unique<Program>(barrier(n, r)));
          todo[r].push_back({owned_.back().get(), value});
          todo[r].push_back({&bodies_.back()[r], value});
        }
      }
      for (std::uint32_t r = 0; r < n; ++r) {
        owned_.push_back(std::make_unique<Program>(check(s, r)));
        todo[r].push_back({owned_.back().get(), value});
      }
    }
    // A rank's i-th program belongs to shape i / (fill, calls x (barrier, body), check).
    std::vector<std::size_t> next(n, 0);
    auto start_next = [&](std::uint32_t r, std::uint64_t t) {
      if (next[r] == todo[r].size()) {
        finished_[r] = true;
        return;
      }
      const auto [prog, v] = todo[r][next[r]];
      const Shape* shape = &shapes_[next[r] / (2 + 2 * calls)];
      runners_[r].start(*prog, v, shape, Time::ps(static_cast<std::int64_t>(t)));
      ++next[r];
    };
    finished_.assign(n, false);
    for (std::uint32_t r = 0; r < n; ++r) {
      start_next(r, 0);
      drive(r, 0, start_next);
    }
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      now_ = e.at;
      if (e.kind == Event::Serve) {
        serve(e);
      } else if (e.kind == Event::Complete) {
        runners_[e.rank].completed(e.token, e.failed ? nullptr : e.data.data(),
                                   Time::ps(static_cast<std::int64_t>(now_)));
        drive(e.rank, now_, start_next);
      } else {
        drive(e.rank, now_, start_next);
      }
    }
    std::uint64_t checked = 0, wrong = 0;
    for (std::uint32_t r = 0; r < n; ++r) {
      REQUIRE(finished_[r]);
      checked += runners_[r].checked();
      wrong += runners_[r].wrong();
    }
    return {checked, wrong};
  }

 private:
  struct Event {
    enum Kind { Serve, Complete, Wake } kind;
    std::uint64_t at, seq;
    std::uint32_t rank = 0, token = 0;
    bool store = false, failed = false;
    std::uint64_t va = 0;
    std::uint32_t size = 0;
    std::array<unsigned char, 256> data{};
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  void serve(Event& e) {
    const std::uint32_t r = static_cast<std::uint32_t>((e.va >> 40) - 1);
    const std::uint64_t off = e.va - base(r);
    REQUIRE(off + e.size <= mem_[r].size());
    if (e.store)
      std::memcpy(mem_[r].data() + off, e.data.data(), e.size);
    else
      std::memcpy(e.data.data(), mem_[r].data() + off, e.size);
    e.kind = Event::Complete;
    e.at = now_ + delay();
    e.seq = seq_++;
    events_.push(e);
  }
  // Mostly short, now and then long: accesses overtake each other by a lot.
  std::uint64_t delay() { return 1 + rng_() % 400 + (rng_() % 16 == 0 ? rng_() % 20000 : 0); }
  template <class F>
  void drive(std::uint32_t r, std::uint64_t t, F& start_next) {
    for (;;) {
      Runner& run = runners_[r];
      Runner::Request q;
      while (run.next(Time::ps(static_cast<std::int64_t>(t)), q)) {
        // No access is larger than the access size or crosses a 256-byte boundary (a page
        // boundary within it would take the wrong physical page).
        REQUIRE(q.size <= access_size_);
        REQUIRE(q.va / 256 == (q.va + q.size - 1) / 256);
        Event e;
        e.kind = Event::Serve;
        e.at = t + delay();
        e.seq = seq_++;
        e.rank = r;
        e.token = q.token;
        e.store = q.store;
        e.va = q.va;
        e.size = q.size;
        if (q.store) std::memcpy(e.data.data(), q.data, q.size);
        events_.push(e);
      }
      if (run.done() && !finished_[r]) {
        REQUIRE_FALSE(run.failed());
        start_next(r, t);
        if (finished_[r]) return;
        continue;
      }
      const Time w = run.wake_at();
      if (w != Time::max()) {
        Event e;
        e.kind = Event::Wake;
        e.at = std::max<std::uint64_t>(t + 1, static_cast<std::uint64_t>(w.as_ps()));
        e.seq = seq_++;
        e.rank = r;
        events_.push(e);
      }
      return;
    }
  }

  std::vector<Shape> shapes_;
  Layout layout_;
  std::mt19937_64 rng_;
  std::uint64_t access_size_;
  std::vector<std::vector<unsigned char>> mem_;
  std::vector<Runner> runners_;
  std::vector<std::vector<Program>> bodies_;
  std::vector<std::unique_ptr<Program>> owned_;
  std::vector<bool> finished_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t now_ = 0, seq_ = 0;
};

Shape shape(Op op, Algorithm alg, std::uint32_t n, std::uint64_t bytes,
            std::uint64_t piece = 1024) {
  Shape s;
  s.op = op;
  s.alg = alg;
  s.n = n;
  s.bytes = bytes;
  s.piece = piece;
  s.root = n > 2 ? 2 : 0;
  return s;
}

std::uint64_t output_elements(const Shape& s) {
  std::uint64_t e = 0;
  for (std::uint32_t r = 0; r < s.n; ++r)
    e += s.output_bytes(r) / 4;
  return e;
}

}  // namespace

TEST_CASE(
    "every collective and algorithm ends with the right data, accesses completing out of order") {
  struct Case {
    Op op;
    Algorithm alg;
  };
  const Case cases[] = {
      {Op::AllReduce, Algorithm::Ring},        {Op::AllReduce, Algorithm::OneShot},
      {Op::AllReduce, Algorithm::TwoShot},     {Op::AllGather, Algorithm::Ring},
      {Op::AllGather, Algorithm::OneShot},     {Op::ReduceScatter, Algorithm::Ring},
      {Op::ReduceScatter, Algorithm::OneShot}, {Op::AllToAll, Algorithm::OneShot},
      {Op::Broadcast, Algorithm::Ring},        {Op::Broadcast, Algorithm::OneShot},
  };
  for (const Case& c : cases) {
    for (std::uint32_t n : {2u, 3u, 5u, 8u}) {
      // Sizes that split evenly and sizes that do not (all_to_all: multiples of 64 B x n).
      const std::uint64_t unit = c.op == Op::AllToAll ? 64 * n : 64;
      for (std::uint64_t bytes : {unit, 37 * unit, 160 * unit}) {
        CAPTURE(enum_name(std::span<const EnumName<Op>>(kOpNames), c.op),
                enum_name(std::span<const EnumName<Algorithm>>(kAlgorithmNames), c.alg), n, bytes);
        const Shape s = shape(c.op, c.alg, n, bytes);
        Harness h({s}, n, 256, 8, n * 1000 + bytes);
        const auto [checked, wrong] = h.run(2);
        CHECK(checked == output_elements(s));
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("all_to_all_v: skewed blocks, empty ones among them, land where they belong") {
  for (std::uint32_t n : {2u, 3u, 6u}) {
    Shape s = shape(Op::AllToAllV, Algorithm::OneShot, n, 0);
    std::uint64_t total = 0;
    for (std::uint32_t i = 0; i < n; ++i)
      for (std::uint32_t j = 0; j < n; ++j) {
        // A hot receiver (participant 1), an empty block, and lines of odd counts.
        const std::uint64_t b = j == 1             ? 64 * (40 + 3 * i)
                                : (i + j) % 4 == 0 ? 0
                                                   : 64 * (i + 2 * j + 1);
        s.blocks.push_back(b);
        total += b;
      }
    s.bytes = total / n;
    CAPTURE(n);
    Harness h({s}, n, 192, 8, 11 + n);
    const auto [checked, wrong] = h.run(2);
    CHECK(checked == output_elements(s));
    CHECK(wrong == 0);
    CHECK(s.output_bytes(1) == [&] {
      std::uint64_t in = 0;
      for (std::uint32_t i = 0; i < n; ++i)
        in += s.blocks[i * n + 1];
      return in;
    }());
  }
  CHECK(invalid_blocks(3, std::vector<std::uint64_t>(8, 64)).find("needs 9 sizes") == 0);
  CHECK(invalid_blocks(2, {64, 65, 0, 0}) == "every size must be a multiple of 64 B");
}

TEST_CASE("several sizes one after the other reuse the windows and flags") {
  std::vector<Shape> shapes;
  for (std::uint64_t b : {64ull, 4096ull, 1000ull * 64})
    shapes.push_back(shape(Op::AllReduce, Algorithm::Ring, 4, b, 512));
  Harness h(shapes, 4, 192, 16, 7);  // 192-byte accesses: lines end mid-access
  const auto [checked, wrong] = h.run(3);
  std::uint64_t want = 0;
  for (const Shape& s : shapes)
    want += output_elements(s);
  CHECK(checked == want);
  CHECK(wrong == 0);
}

TEST_CASE("the harness catches a program that reads before its data has landed") {
  // Ring all_reduce without the reduce-scatter's waits: a participant reduces its scratch
  // before the previous one has stored into it.
  const Shape s = shape(Op::AllReduce, Algorithm::Ring, 4, 64 * 64, 256);
  Harness h({s}, 4, 64, 8, 3);
  const auto [checked, wrong] = h.run(1, [](std::vector<Program>& progs) {
    for (Program& p : progs)
      std::erase_if(p.steps, [](const Step& st) { return st.kind == Step::Kind::Wait; });
  });
  CHECK(checked == output_elements(s));
  CHECK(wrong > 0);
}

TEST_CASE("collective shapes: invalid combinations and sizes, bus factors, layout") {
  CHECK(invalid(Op::AllGather, Algorithm::TwoShot) == "two_shot is an all_reduce algorithm");
  CHECK_FALSE(invalid(Op::AllToAll, Algorithm::Ring).empty());
  CHECK(invalid(Op::AllReduce, Algorithm::TwoShot).empty());
  CHECK_FALSE(invalid_size(Op::AllReduce, 4, 100).empty());
  CHECK(invalid_size(Op::AllReduce, 72, 1 << 20).empty());
  CHECK(invalid_size(Op::AllToAll, 3, 64 * 4).find("192 B") != std::string::npos);
  CHECK(shape(Op::AllReduce, Algorithm::Ring, 8, 64).bus_factor() == Approx(2.0 * 7 / 8));
  CHECK(shape(Op::AllGather, Algorithm::Ring, 8, 512).bus_factor() == Approx(7.0 / 8));
  CHECK(shape(Op::Broadcast, Algorithm::Ring, 8, 64).bus_factor() == 1.0);
  // 72 participants and a size that does not split evenly: shares differ by at most a line
  // and cover the buffer.
  const Shape s = shape(Op::AllReduce, Algorithm::Ring, 72, 1 << 20, 65536);
  std::uint64_t total = 0, lo = UINT64_MAX, hi = 0;
  for (std::uint32_t c = 0; c < 72; ++c) {
    total += s.chunk_bytes(c);
    lo = std::min(lo, s.chunk_bytes(c));
    hi = std::max(hi, s.chunk_bytes(c));
  }
  CHECK(total == 1 << 20);
  CHECK(hi - lo <= 64);
  const Layout l = layout_for({s});
  CHECK(l.input >= kBarrierSlots * kFlagBytes);
  CHECK(l.output - l.input >= (1 << 20));
  CHECK(l.window - l.scratch >= (1 << 20));
  // A ring participant touches only its own window and the next one's; one_shot every one.
  const auto ring = build(s);
  CHECK(ring[5].peers() == std::vector<std::uint32_t>{5, 6});
  const auto direct = build(shape(Op::AllReduce, Algorithm::OneShot, 8, 4096));
  CHECK(direct[0].peers().size() == 8);
  // The barrier's rounds: 0 -> 1, 2, 4 for 8 participants.
  const Program b = barrier(8, 0);
  CHECK(b.peers() == std::vector<std::uint32_t>{0, 1, 2, 4});
}

TEST_CASE(
    "a call that leaves its output unwritten fails the check, whatever an earlier size left") {
  // Two sizes of all_reduce; the second size's programs store nothing into the outputs (their
  // last reductions dropped). The first size left the right sums in its part of the outputs,
  // so only the NaN the fill puts there catches it.
  std::vector<Shape> shapes = {shape(Op::AllReduce, Algorithm::OneShot, 3, 64 * 96),
                               shape(Op::AllReduce, Algorithm::OneShot, 3, 64 * 48)};
  Harness h(shapes, 3, 256, 8, 5);
  int calls = 0;
  const auto [checked, wrong] = h.run(1, [&](std::vector<Program>& progs) {
    if (calls++ == 0) return;
    for (Program& p : progs)
      std::erase_if(p.steps, [](const Step& st) { return st.kind == Step::Kind::Reduce; });
  });
  CHECK(checked == output_elements(shapes[0]) + output_elements(shapes[1]));
  CHECK(wrong == output_elements(shapes[1]));
}

#include "sim/core/stat_pack.hpp"

#include <fmt/format.h>

#include <span>
#include <stdexcept>
#include <string_view>

namespace podsim {

namespace {

// The tag's upper bytes ("podstat" in ASCII) catch a reader that has lost its place; the low
// byte is the kind.
constexpr std::uint64_t kTagPattern = 0x706f'6473'7461'7400ull;
constexpr std::uint64_t kTagKindMask = 0xff;
// count, min, max, sum low, sum high, the first bucket packed, the number of buckets
constexpr std::size_t kHistHeaderWords = 7;

std::uint64_t tag_of(Stat::Kind k) {
  return kTagPattern | static_cast<std::uint64_t>(k);
}

std::string_view kind_name(std::uint64_t k) {
  switch (static_cast<Stat::Kind>(k)) {
    case Stat::Kind::Counter: return "a counter";
    case Stat::Kind::Series: return "a series";
    case Stat::Kind::Formula: return "a formula";
    case Stat::Kind::Distribution: return "a distribution";
    case Stat::Kind::Breakdown: return "a breakdown";
  }
  return "an unknown kind";
}

[[noreturn]] void fail(const Stat& s, std::string_view what) {
  throw std::runtime_error(fmt::format("merging packed stat '{}': {}", s.name(), what));
}

}  // namespace

void pack_stat(const Stat& s, std::vector<std::uint64_t>& out) {
  out.push_back(tag_of(s.kind()));
  const std::size_t length_at = out.size();
  out.push_back(0);
  switch (s.kind()) {
    case Stat::Kind::Counter: out.push_back(s.as<Counter>()->value()); break;
    case Stat::Kind::Series: {
      const auto& v = s.as<Series>()->values();
      out.insert(out.end(), v.begin(), v.end());
      break;
    }
    case Stat::Kind::Formula: break;
    case Stat::Kind::Distribution: {
      const LogHistogram& h = s.as<Distribution>()->histogram();
      const unsigned __int128 sum = h.stored_sum();
      out.push_back(h.count());
      out.push_back(h.stored_min());
      out.push_back(h.max());
      out.push_back(static_cast<std::uint64_t>(sum));
      out.push_back(static_cast<std::uint64_t>(sum >> 64));
      // Only the buckets from the first to the last that hold samples: a histogram of times
      // has thousands of buckets, nearly all empty (those it holds start at first_bucket()).
      const auto c = h.counts();
      std::size_t first = 0, last = c.size();
      while (first < last && c[first] == 0)
        ++first;
      while (last > first && c[last - 1] == 0)
        --last;
      out.push_back(h.first_bucket() + first);
      out.push_back(h.bucket_count());
      out.insert(out.end(), c.begin() + static_cast<std::ptrdiff_t>(first),
                 c.begin() + static_cast<std::ptrdiff_t>(last));
      break;
    }
    case Stat::Kind::Breakdown: {
      const Breakdown& b = *s.as<Breakdown>();
      out.insert(out.end(), b.sums().begin(), b.sums().end());
      out.push_back(b.samples());
      break;
    }
  }
  out[length_at] = out.size() - length_at - 1;
}

const std::uint64_t* merge_packed(const Stat& s, const std::uint64_t* in,
                                  const std::uint64_t* end) {
  const auto left = static_cast<std::size_t>(end - in);
  if (left < 2) fail(s, fmt::format("the buffer ends inside the header ({} words left)", left));
  const std::uint64_t tag = in[0], n = in[1];
  if ((tag & ~kTagKindMask) != kTagPattern)
    fail(s, fmt::format("not a packed stat (tag {:#018x})", tag));
  if (tag != tag_of(s.kind()))
    fail(s, fmt::format("packed as {}, merged into {}", kind_name(tag & kTagKindMask),
                        kind_name(static_cast<std::uint64_t>(s.kind()))));
  if (n > left - 2)
    fail(s, fmt::format("the buffer ends inside the values ({} packed, {} left)", n, left - 2));
  const std::span<const std::uint64_t> v(in + 2, n);
  const auto expect_length = [&](std::size_t want, std::string_view what) {
    if (n != want) fail(s, fmt::format("{} packed values, {} has {}", n, what, want));
  };

  switch (s.kind()) {
    case Stat::Kind::Counter:
      expect_length(1, "a counter");
      s.as_mutable<Counter>()->inc(v[0]);
      break;
    case Stat::Kind::Series: {
      Series& series = *s.as_mutable<Series>();
      expect_length(series.values().size(), "this series");
      for (std::size_t i = 0; i < n; ++i)
        series.add(i, v[i]);
      break;
    }
    case Stat::Kind::Formula: expect_length(0, "a formula"); break;
    case Stat::Kind::Distribution: {
      if (n < kHistHeaderWords)
        fail(s,
             fmt::format("{} packed values, a distribution has at least {}", n, kHistHeaderWords));
      const unsigned __int128 sum = static_cast<unsigned __int128>(v[4]) << 64 | v[3];
      try {
        s.as_mutable<Distribution>()->merge_state(
            static_cast<std::size_t>(v[5]), static_cast<std::size_t>(v[6]),
            v.subspan(kHistHeaderWords), v[0], v[1], v[2], sum);
      } catch (const std::invalid_argument& e) {
        fail(s, e.what());
      }
      break;
    }
    case Stat::Kind::Breakdown: {
      Breakdown& b = *s.as_mutable<Breakdown>();
      if (n != b.part_count() + 1)
        fail(s, fmt::format("{} parts packed, this breakdown has {}", n == 0 ? 0 : n - 1,
                            b.part_count()));
      b.merge(v.first(b.part_count()), v.back());
      break;
    }
  }
  return in + 2 + n;
}

}  // namespace podsim

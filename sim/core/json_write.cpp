#include "sim/core/json_write.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <stdexcept>

namespace podsim::config {

void PrettyJson::misuse(const char* what) {
  throw std::logic_error(std::string("PrettyJson: ") + what);
}

void PrettyJson::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;  // the document itself
  Level& l = levels_.back();
  if (!l.array) misuse("a value in an object needs its key first");
  if (l.one_line) {
    if (!l.empty) out_ += ", ";
  } else {
    out_ += l.empty ? "\n" : ",\n";
    pad(levels_.size());
  }
  l.empty = false;
}

void PrettyJson::begin_object() {
  if (!levels_.empty() && levels_.back().one_line) misuse("an object in a one-line array");
  before_value();
  out_ += '{';
  levels_.push_back(Level{});
}

void PrettyJson::end_object() {
  if (levels_.empty() || levels_.back().array || after_key_)
    misuse("end_object with no object open, or after a key without its value");
  const bool empty = levels_.back().empty;
  levels_.pop_back();
  if (!empty) {
    out_ += '\n';
    pad(levels_.size());
  }
  out_ += '}';
}

void PrettyJson::begin_array(bool one_line) {
  if (!levels_.empty() && levels_.back().one_line) misuse("an array in a one-line array");
  before_value();
  out_ += '[';
  levels_.push_back(Level{true, one_line, true});
}

void PrettyJson::end_array() {
  if (levels_.empty() || !levels_.back().array) misuse("end_array with no array open");
  const Level l = levels_.back();
  levels_.pop_back();
  if (!l.empty && !l.one_line) {
    out_ += '\n';
    pad(levels_.size());
  }
  out_ += ']';
}

void PrettyJson::key(std::string_view k) {
  if (levels_.empty() || levels_.back().array || after_key_)
    misuse("a key outside an object, or after a key without its value");
  if (out_.size() >= drain_at_) drain_(out_);
  Level& l = levels_.back();
  // The comma after the member before, the line break and the indent, in one step.
  const std::size_t at = out_.size(), indent = levels_.size() * 2, comma = l.empty ? 0 : 1;
  out_.resize(at + comma + 1 + indent, ' ');
  if (comma) out_[at] = ',';
  out_[at + comma] = '\n';
  l.empty = false;
  quoted(k);
  out_ += ": ";
  after_key_ = true;
}

void PrettyJson::continue_object(std::size_t depth) {
  if (!levels_.empty() || after_key_ || depth == 0)
    misuse("continue_object on a writer that has begun, or at depth 0");
  levels_.assign(depth, Level{false, false, false});
}

void PrettyJson::splice_members(std::string_view continued) {
  if (levels_.empty() || levels_.back().array || after_key_)
    misuse("members spliced outside an object, or after a key");
  if (continued.empty()) return;
  if (continued.substr(0, 2) != ",\n") misuse("spliced members that do not continue an object");
  Level& l = levels_.back();
  if (l.empty) continued.remove_prefix(1);  // the object's first member: no comma before it
  l.empty = false;
  out_.append(continued);
  if (out_.size() >= drain_at_) drain_(out_);
}

// Numbers as fmt's "{}" writes them, without parsing "{}" for each (stats.json holds about a
// million on the 1,024-GPU pod).
void PrettyJson::value(std::uint64_t v) {
  before_value();
  const fmt::format_int text(v);
  out_.append(text.data(), text.size());
}
void PrettyJson::value(std::int64_t v) {
  before_value();
  const fmt::format_int text(v);
  out_.append(text.data(), text.size());
}
void PrettyJson::value(double v) {
  before_value();
  if (std::isfinite(v))
    fmt::format_to(std::back_inserter(out_), FMT_COMPILE("{}"), v);
  else
    out_ += "null";
}
void PrettyJson::value(bool v) {
  before_value();
  out_ += v ? "true" : "false";
}
void PrettyJson::value(std::string_view v) {
  before_value();
  quoted(v);
}
void PrettyJson::null() {
  before_value();
  out_ += "null";
}

namespace {

// Whether any of the 8 bytes of `w` may need escaping (below 0x20, a quote or a backslash):
// never false when one does; sometimes true when none does (then the bytes are looked at one
// by one). The byte tests of "Bit Twiddling Hacks" (hasless, haszero).
bool may_escape(std::uint64_t w) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  const std::uint64_t quote = w ^ (kOnes * '"'), slash = w ^ (kOnes * '\\');
  return (((w - kOnes * 0x20) & ~w) | ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash)) &
         kHighs;
}

// The first byte of s at or after `i` that needs escaping (s.size(): none): eight bytes at a
// time while none may, then byte by byte.
// Inlined: called for every key and string of stats.json (a call costs as much as a short key).
[[gnu::always_inline]] inline std::size_t next_escape(std::string_view s, std::size_t i) {
  for (; s.size() - i >= 8; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (may_escape(w)) break;
  }
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == '"' || c == '\\') break;
  }
  return i;
}

}  // namespace

// As Boost.JSON's serializer escapes: the quote, the backslash and control characters
// (\b \t \n \f \r, the others as \u00xx); every other byte as it is. Most strings (stats'
// paths, units, descriptions: 35 MB of stats.json on a 1,024-GPU pod) need nothing escaped and
// go in with their quotes in one step.
void PrettyJson::quoted(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t i = next_escape(s, 0);
  if (i == s.size()) {
    const std::size_t at = out_.size();
    out_.resize(at + s.size() + 2);
    char* p = out_.data() + at;
    p[0] = '"';
    if (!s.empty()) std::memcpy(p + 1, s.data(), s.size());
    p[s.size() + 1] = '"';
    return;
  }
  out_ += '"';
  std::size_t run = 0;  // start of the bytes not yet copied
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    out_.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\b': out_ += "\\b"; break;
      case '\t': out_ += "\\t"; break;
      case '\n': out_ += "\\n"; break;
      case '\f': out_ += "\\f"; break;
      case '\r': out_ += "\\r"; break;
      default:
        out_ += "\\u00";
        out_ += kHex[c >> 4];
        out_ += kHex[c & 15];
    }
    i = next_escape(s, run);
  }
  out_.append(s.data() + run, s.size() - run);
  out_ += '"';
}

void PrettyJson::value(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::object:
      begin_object();
      for (const auto& kv : v.get_object()) {
        key(kv.key());
        value(kv.value());
      }
      end_object();
      return;
    case boost::json::kind::array: {
      const auto& a = v.get_array();
      bool scalars = true;
      for (const auto& e : a)
        scalars = scalars && !e.is_object() && !e.is_array();
      begin_array(scalars);
      for (const auto& e : a)
        value(e);
      end_array();
      return;
    }
    case boost::json::kind::double_: value(v.get_double()); return;
    case boost::json::kind::int64: value(v.get_int64()); return;
    case boost::json::kind::uint64: value(v.get_uint64()); return;
    case boost::json::kind::bool_: value(v.get_bool()); return;
    case boost::json::kind::string: value(std::string_view(v.get_string())); return;
    case boost::json::kind::null: null(); return;
  }
}

std::string to_pretty_json(const boost::json::value& v) {
  std::string out;
  PrettyJson w(out);
  w.value(v);
  out += "\n";
  return out;
}

}  // namespace podsim::config

#include "sim/core/config_io.hpp"

#include <fmt/format.h>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

namespace json = boost::json;

namespace podsim::config {

ConfigError::ConfigError(std::string source, std::string path, std::string message)
    : std::runtime_error(path.empty() ? fmt::format("{}: {}", source, message)
                                      : fmt::format("{}: {}: {}", source, path, message)),
      source_(std::move(source)),
      path_(std::move(path)),
      message_(std::move(message)) {}

std::string join_path(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  return std::string(prefix) + "." + std::string(key);
}

bool paths_overlap(std::string_view a, std::string_view b) {
  const std::string_view shorter = a.size() <= b.size() ? a : b;
  const std::string_view longer = a.size() <= b.size() ? b : a;
  return shorter == longer ||
         (longer.substr(0, shorter.size()) == shorter && longer[shorter.size()] == '.');
}

namespace {

json::parse_options lenient_syntax() {
  json::parse_options opt;
  opt.allow_comments = true;
  opt.allow_trailing_commas = true;
  return opt;
}

// Line and column (1-based) of byte offset `pos` in `text`.
std::pair<std::size_t, std::size_t> line_col(std::string_view text, std::size_t pos) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

// A key or a string with a NUL in it (JSON's \u0000): it would cut the text short wherever it
// is used as a C string (a file path), so it is refused, with the key path.
void refuse_nul(const json::value& v, const std::string& path, const std::string& source) {
  auto has_nul = [](std::string_view s) { return s.find('\0') != std::string_view::npos; };
  if (v.is_string() && has_nul(v.get_string()))
    throw ConfigError(source, path, "contains a NUL character (\\u0000)");
  if (v.is_object())
    for (const auto& [k, e] : v.get_object()) {
      if (has_nul(k)) {
        std::string shown;
        for (char ch : std::string_view(k))
          shown += ch == '\0' ? std::string("\\u0000") : std::string(1, ch);
        throw ConfigError(source, path,
                          fmt::format("a key contains a NUL character: \"{}\"", shown));
      }
      refuse_nul(e, join_path(path, k), source);
    }
  if (v.is_array()) {
    std::size_t n = 0;
    for (const auto& e : v.get_array())
      refuse_nul(e, fmt::format("{}[{}]", path, n++), source);
  }
}

}  // namespace

std::optional<Duplicate> find_duplicate_key(std::string_view text) {
  struct Frame {
    bool object;
    bool expect_key;
    std::string path;       // this object's or array's
    std::string last_key;   // an object's: the key whose value comes next
    std::size_t index = 0;  // an array's: the element that comes next
    std::map<std::string, std::size_t, std::less<>> keys;
  };
  std::vector<Frame> stack;
  // The path of a value that opens here: its parent's and its key or index.
  auto child_path = [&]() -> std::string {
    if (stack.empty()) return {};
    const Frame& f = stack.back();
    return join_path(f.path, f.object ? f.last_key : std::to_string(f.index));
  };
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n')
        ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const auto end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
    } else if (c == '"') {
      const std::size_t start = i++;
      while (i < text.size() && text[i] != '"')
        i += text[i] == '\\' ? 2 : 1;
      ++i;
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        Frame& f = stack.back();
        // The key as JSON reads it (with its escapes undone), as spelt if it does not read.
        std::string key(text.substr(start + 1, i - start - 2));
        json::error_code ec;
        if (const json::value v = json::parse(text.substr(start, i - start), ec);
            !ec && v.is_string())
          key = std::string(v.as_string());
        const auto [it, fresh] = f.keys.emplace(key, start);
        if (!fresh) return Duplicate{key, join_path(f.path, key), it->second, start};
        f.expect_key = false;
        f.last_key = key;
      }
    } else {
      if (c == '{')
        stack.push_back({true, true, child_path(), {}, 0, {}});
      else if (c == '[')
        stack.push_back({false, false, child_path(), {}, 0, {}});
      else if ((c == '}' || c == ']') && !stack.empty())
        stack.pop_back();
      else if (c == ',' && !stack.empty() && stack.back().object)
        stack.back().expect_key = true;
      else if (c == ',' && !stack.empty())
        ++stack.back().index;
      ++i;
    }
  }
  return std::nullopt;
}

ConfigDoc ConfigDoc::from_text(std::string_view text, std::string source_name) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte-order mark
  json::stream_parser p({}, lenient_syntax());
  json::error_code ec;
  std::size_t used = p.write_some(text.data(), text.size(), ec);
  if (!ec && used < text.size()) {
    ec = json::make_error_code(json::error::extra_data);
  }
  if (!ec) p.finish(ec);
  if (ec) {
    auto [line, col] = line_col(text, used);
    throw ConfigError(
        source_name, "",
        fmt::format("line {}, column {}: invalid JSON ({})", line, col, ec.message()));
  }
  if (const auto d = find_duplicate_key(text)) {
    const auto [l1, c1] = line_col(text, d->first);
    const auto [l2, c2] = line_col(text, d->second);
    throw ConfigError(source_name, d->path,
                      fmt::format("line {}, column {}: the key \"{}\" appears twice in one "
                                  "object (first at line {}, column {})",
                                  l2, c2, d->key, l1, c1));
  }
  ConfigDoc doc;
  doc.root_ = p.release();
  doc.source_ = std::move(source_name);
  refuse_nul(doc.root_, "", doc.source_);
  if (!doc.root_.is_object())
    throw ConfigError(doc.source_, "", "the top level must be a JSON object ({ ... })");
  return doc;
}

ConfigDoc ConfigDoc::from_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(path, "", "is a directory, not a config file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "", "cannot open the file for reading");
  // Read at most kMaxConfigBytes (and one more, to know): a config is small; /dev/urandom
  // or a wrong file is not read until memory runs out.
  constexpr std::size_t kMaxConfigBytes = std::size_t{16} << 20;
  std::string text;
  char chunk[65536];
  while (text.size() <= kMaxConfigBytes && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) throw ConfigError(path, "", "cannot read the file");
  if (text.size() > kMaxConfigBytes)
    throw ConfigError(
        path, "", fmt::format("larger than {} MiB: not a podsim config", kMaxConfigBytes >> 20));
  return from_text(text, path);
}

void ConfigDoc::apply_override(std::string_view assignment) {
  const std::string origin = "--set " + std::string(assignment);
  auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw ConfigError(origin, "", "expected key.path=value");
  std::string path(assignment.substr(0, eq));
  std::string_view text = assignment.substr(eq + 1);

  json::value value;
  {
    json::error_code ec;
    json::value parsed = json::parse(text, ec, {}, lenient_syntax());
    if (!ec && !text.empty())
      value = std::move(parsed);
    else
      value = json::string(text);
    if (const auto d = find_duplicate_key(text); d && !ec)
      throw ConfigError(origin, join_path(path, d->path),
                        fmt::format("the key \"{}\" appears twice in one object", d->key));
    refuse_nul(value, std::string(assignment.substr(0, eq)), origin);
  }

  // Walk (creating objects as needed) to the parent of the last key.
  json::value* node = &root_;
  std::string walked;
  std::size_t start = 0;
  while (true) {
    auto dot = path.find('.', start);
    std::string key =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw ConfigError(origin, path, "empty key in the key path");
    bool last = dot == std::string::npos;
    if (node->is_array()) {
      auto& arr = node->get_array();
      std::size_t idx = 0;
      auto [p, e] = std::from_chars(key.data(), key.data() + key.size(), idx);
      if (e != std::errc() || p != key.data() + key.size() || idx >= arr.size())
        throw ConfigError(origin, join_path(walked, key),
                          fmt::format("{} is an array of {} elements; expected an index below {}",
                                      walked, arr.size(), arr.size()));
      if (last) {
        arr[idx] = value;
        break;
      }
      node = &arr[idx];
    } else if (node->is_object()) {
      auto& obj = node->get_object();
      if (last) {
        obj[key] = value;
        break;
      }
      auto* child = obj.if_contains(key);
      if (!child) child = &(obj[key] = json::object());
      node = child;
    } else {
      throw ConfigError(origin, walked, "is not a section, so it has no key \"" + key + "\"");
    }
    walked = join_path(walked, key);
    start = dot + 1;
  }
  overrides_.emplace_back(path, origin);
}

std::string ConfigDoc::origin_of(std::string_view path) const {
  // The latest override that set this path, one of its parents or one of its children.
  auto within = [](std::string_view inner, std::string_view outer) {
    return inner == outer || (inner.size() > outer.size() &&
                              inner.substr(0, outer.size()) == outer && inner[outer.size()] == '.');
  };
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it)
    if (within(path, it->first) || within(it->first, path)) return it->second;
  return source_;
}

// ---- value conversions ----
namespace detail {

void read_value(const json::value& v, bool& out) {
  if (!v.is_bool()) throw Mismatch{what_of<bool>()};
  out = v.get_bool();
}

template <class Int>
static Int read_int(const json::value& v) {
  if (v.is_int64()) {
    std::int64_t x = v.get_int64();
    if constexpr (std::is_unsigned_v<Int>) {
      if (x < 0) throw Mismatch{"a non-negative integer"};
    }
    if (static_cast<std::uint64_t>(x) >
            static_cast<std::uint64_t>(std::numeric_limits<Int>::max()) &&
        x > 0)
      throw Mismatch{fmt::format("an integer no larger than {}", std::numeric_limits<Int>::max())};
    return static_cast<Int>(x);
  }
  if (v.is_uint64()) {
    std::uint64_t x = v.get_uint64();
    if (x > static_cast<std::uint64_t>(std::numeric_limits<Int>::max()))
      throw Mismatch{fmt::format("an integer no larger than {}", std::numeric_limits<Int>::max())};
    return static_cast<Int>(x);
  }
  throw Mismatch{std::is_unsigned_v<Int> ? "a non-negative integer" : "an integer"};
}

void read_value(const json::value& v, std::uint32_t& out) {
  out = read_int<std::uint32_t>(v);
}
void read_value(const json::value& v, std::uint64_t& out) {
  out = read_int<std::uint64_t>(v);
}
void read_value(const json::value& v, std::int64_t& out) {
  out = read_int<std::int64_t>(v);
}

void read_value(const json::value& v, double& out) {
  if (v.is_double())
    out = v.get_double();
  else if (v.is_int64())
    out = static_cast<double>(v.get_int64());
  else if (v.is_uint64())
    out = static_cast<double>(v.get_uint64());
  else
    throw Mismatch{what_of<double>()};
  if (!std::isfinite(out)) throw Mismatch{"a finite number"};
}

void read_value(const json::value& v, std::string& out) {
  if (!v.is_string()) throw Mismatch{what_of<std::string>()};
  out = std::string(v.get_string());
}

template <class T>
static void read_unit(const json::value& v, T& out) {
  if (!v.is_string()) throw Mismatch{what_of<T>()};
  out = UnitTraits<T>::parse(std::string_view(v.get_string()));
}
void read_value(const json::value& v, Time& out) {
  read_unit(v, out);
}
void read_value(const json::value& v, Bytes& out) {
  read_unit(v, out);
}
void read_value(const json::value& v, Bandwidth& out) {
  read_unit(v, out);
}
void read_value(const json::value& v, Frequency& out) {
  read_unit(v, out);
}
void read_value(const json::value& v, Length& out) {
  read_unit(v, out);
}

json::value write_value(bool v) {
  return v;
}
json::value write_value(std::uint32_t v) {
  return v;
}
json::value write_value(std::uint64_t v) {
  return v;
}
json::value write_value(std::int64_t v) {
  return v;
}
json::value write_value(double v) {
  return v;
}
json::value write_value(const std::string& v) {
  return json::string(v);
}
json::value write_value(Time v) {
  return json::string(to_string(v));
}
json::value write_value(Bytes v) {
  return json::string(to_string(v));
}
json::value write_value(Bandwidth v) {
  return json::string(to_string(v));
}
json::value write_value(Frequency v) {
  return json::string(to_string(v));
}
json::value write_value(Length v) {
  return json::string(to_string(v));
}

}  // namespace detail

// ---- JsonReader ----

JsonReader::JsonReader(const ConfigDoc& doc, const json::value& node, std::string path)
    : doc_(doc), obj_(&node.get_object()), path_(std::move(path)) {}

const json::value* JsonReader::take(std::string_view key) {
  taken_.emplace(key);
  return obj_->if_contains(key);
}

void JsonReader::finish() const {
  for (const auto& kv : *obj_) {
    if (taken_.count(std::string_view(kv.key()))) continue;
    std::string known;
    for (const auto& k : taken_)
      known += (known.empty() ? "" : ", ") + k;
    std::string where = path_.empty() ? "the top level" : "\"" + path_ + "\"";
    fail(kv.key(), fmt::format("unknown key; {} has the keys: {}", where, known));
  }
}

void JsonReader::fail(std::string_view key, const std::string& message) const {
  std::string p = join_path(path_, key);
  throw ConfigError(doc_.origin_of(p), p, message);
}

std::string JsonReader::kind_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64: return "an integer";
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "?";
}

std::string JsonReader::describe(const json::value& v) {
  if (v.is_object() || v.is_array() || v.is_null()) return kind_of(v);
  if (v.is_double()) return kind_of(v) + " " + fmt::format("{}", v.get_double());
  return kind_of(v) + " " + json::serialize(v);
}

// ---- DocWriter ----

std::string DocWriter::markdown() const {
  std::string out = "| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
  auto esc = [](std::string s) {
    std::string r;
    for (char c : s) {
      if (c == '|')
        r += "\\|";
      else
        r += c;
    }
    return r;
  };
  for (const auto& r : rows_) {
    if (r.type == "section" || r.type == "list") {
      out += fmt::format("| **`{}`** | {} | | | {} |\n", r.path, r.type, esc(r.desc));
    } else {
      const std::string def = r.default_value.empty() ? "" : "`" + esc(r.default_value) + "`";
      out += fmt::format("| `{}` | {} | {} | {} | {} |\n", r.path, r.type, def, esc(r.allowed),
                         esc(r.desc));
    }
  }
  return out;
}

}  // namespace podsim::config

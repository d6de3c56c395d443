// Strict configuration I/O: the visitors that read, write and document the config structs
// declared in sim/core/params.hpp style.
//
// Reading is strict. Any unknown key, wrong JSON type, bad unit or out-of-range value throws
// a ConfigError naming the source (file or --set), the key path and what was expected.
#pragma once

#include <boost/json.hpp>
#include <charconv>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "sim/core/params.hpp"
#include "sim/core/units.hpp"

namespace podsim::config {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string source, std::string path, std::string message);
  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }
  const std::string& message() const { return message_; }

 private:
  std::string source_, path_, message_;
};

// The first key that appears twice in one object of `text` (valid JSON, with comments and
// trailing commas allowed), with both places: JSON parsers keep the last, which would hide
// the first (and a mistyped value in it). Keys compare as JSON reads them (escapes undone).
struct Duplicate {
  std::string key;
  std::string path;           // the key's path from the document's root ("pod.gpus")
  std::size_t first, second;  // byte offsets
};
std::optional<Duplicate> find_duplicate_key(std::string_view text);

// A JSON config document with where it came from and which key paths --set changed.
class ConfigDoc {
 public:
  // Parses JSON text (comments and trailing commas allowed). Syntax errors name line:column.
  static ConfigDoc from_text(std::string_view text, std::string source_name);
  static ConfigDoc from_file(const std::string& path);

  // Applies one "--set key.path=value" override. The value is read as JSON when it parses
  // as JSON (numbers, true/false, objects, arrays, quoted strings) and as a string otherwise.
  void apply_override(std::string_view assignment);

  const boost::json::value& root() const { return root_; }
  const std::string& source_name() const { return source_; }
  // The origin to name in an error at `path`: "--set <path>=..." or the file.
  std::string origin_of(std::string_view path) const;

 private:
  boost::json::value root_;
  std::string source_;
  std::vector<std::pair<std::string, std::string>> overrides_;  // path, assignment text
};

std::string join_path(std::string_view prefix, std::string_view key);
// Whether two key paths name the same setting or one holds the other ("pod" and "pod.gpus").
bool paths_overlap(std::string_view a, std::string_view b);

// Type descriptions for messages ("an integer", "a time such as ...").
namespace detail {
struct Mismatch {
  std::string expected;
};
void read_value(const boost::json::value& v, bool& out);
void read_value(const boost::json::value& v, std::uint32_t& out);
void read_value(const boost::json::value& v, std::uint64_t& out);
void read_value(const boost::json::value& v, std::int64_t& out);
void read_value(const boost::json::value& v, double& out);
void read_value(const boost::json::value& v, std::string& out);
void read_value(const boost::json::value& v, Time& out);
void read_value(const boost::json::value& v, Bytes& out);
void read_value(const boost::json::value& v, Bandwidth& out);
void read_value(const boost::json::value& v, Frequency& out);
void read_value(const boost::json::value& v, Length& out);

boost::json::value write_value(bool v);
boost::json::value write_value(std::uint32_t v);
boost::json::value write_value(std::uint64_t v);
boost::json::value write_value(std::int64_t v);
boost::json::value write_value(double v);
boost::json::value write_value(const std::string& v);
boost::json::value write_value(Time v);
boost::json::value write_value(Bytes v);
boost::json::value write_value(Bandwidth v);
boost::json::value write_value(Frequency v);
boost::json::value write_value(Length v);

template <class T>
std::string what_of() {
  if constexpr (std::is_same_v<T, bool>)
    return "true or false";
  else if constexpr (std::is_integral_v<T>)
    return "an integer";
  else if constexpr (std::is_floating_point_v<T>)
    return "a number";
  else if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else
    return UnitTraits<T>::what;
}
template <class T>
std::string show(const T& v) {
  if constexpr (std::is_floating_point_v<T>) {
    char buf[32];  // the shortest that reads back: 0.001, 5 (not JSON's 1E-3, 5E0)
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  } else if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
    return boost::json::serialize(write_value(v));
  } else {
    return to_string(v);
  }
}
}  // namespace detail

class JsonReader {
 public:
  JsonReader(const ConfigDoc& doc, const boost::json::value& node, std::string path);

  template <class T>
  void field(std::string_view key, T& ref, std::string_view desc, const Bounds<T>& b = {}) {
    (void)desc;
    const boost::json::value* v = take(key);
    if (!v) return;
    ref = convert<T>(*v, key, b);
  }

  template <class T>
  void field(std::string_view key, std::vector<T>& ref, std::string_view desc,
             const Bounds<T>& b = {}) {
    (void)desc;
    const boost::json::value* v = take(key);
    if (!v) return;
    if (!v->is_array())
      fail(key, "expected an array of " + detail::what_of<T>() + ", got " + kind_of(*v));
    std::vector<T> out;
    const auto& arr = v->get_array();
    for (std::size_t i = 0; i < arr.size(); ++i)
      out.push_back(convert<T>(arr[i], std::string(key) + "." + std::to_string(i), b));
    ref = std::move(out);
  }

  // An optional field: present in the config or not (a step's keys, say).
  template <class T>
  void field(std::string_view key, std::optional<T>& ref, std::string_view desc,
             const Bounds<T>& b = {}) {
    (void)desc;
    const boost::json::value* v = take(key);
    if (!v) return;
    ref = convert<T>(*v, key, b);
  }

  template <class T>
  void field(std::string_view key, std::optional<std::vector<T>>& ref, std::string_view desc,
             const Bounds<T>& b = {}) {
    if (!obj_->if_contains(key)) {
      taken_.emplace(key);
      return;
    }
    std::vector<T> v;
    field(key, v, desc, b);
    ref = std::move(v);
  }

  template <class E>
  void choice(std::string_view key, std::optional<E>& ref, std::string_view desc,
              std::span<const EnumName<E>> names) {
    E value{};
    if (!obj_->if_contains(key)) {
      taken_.emplace(key);
      return;
    }
    choice(key, value, desc, names);
    ref = value;
  }

  // A list of sections, each read with S::visit (and checked with S::check).
  template <class S>
  void list(std::string_view key, std::vector<S>& ref, std::string_view desc) {
    (void)desc;
    const boost::json::value* v = take(key);
    if (!v) return;
    if (!v->is_array()) fail(key, "expected an array of objects, got " + kind_of(*v));
    std::vector<S> out;
    const auto& arr = v->get_array();
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const std::string item = std::string(key) + "." + std::to_string(i);
      if (!arr[i].is_object()) fail(item, "expected an object, got " + kind_of(arr[i]));
      S s{};
      JsonReader child(doc_, arr[i], join_path(path_, item));
      s.visit(child);
      child.finish();
      if constexpr (requires { s.check(child); }) s.check(child);
      out.push_back(std::move(s));
    }
    ref = std::move(out);
  }

  template <class E>
  void choice(std::string_view key, E& ref, std::string_view desc,
              std::span<const EnumName<E>> names) {
    (void)desc;
    const boost::json::value* v = take(key);
    if (!v) return;
    std::string options;
    for (const auto& n : names)
      options += (options.empty() ? "\"" : ", \"") + std::string(n.name) + "\"";
    if (!v->is_string()) fail(key, "expected one of " + options + ", got " + kind_of(*v));
    std::string_view s = v->get_string();
    for (const auto& n : names)
      if (n.name == s) {
        ref = n.value;
        return;
      }
    fail(key, "\"" + std::string(s) + "\" is not one of " + options);
  }

  template <class S>
  void section(std::string_view key, S& sub, std::string_view desc) {
    (void)desc;
    const boost::json::value* v = take(key);
    if (!v) return;
    if (!v->is_object()) fail(key, "expected an object (a section), got " + kind_of(*v));
    JsonReader child(doc_, *v, join_path(path_, key));
    sub.visit(child);
    child.finish();
    if constexpr (requires { sub.check(child); }) sub.check(child);
  }

  // Throws for any key of this object that no field() or section() asked for.
  void finish() const;

  [[noreturn]] void fail(std::string_view key, const std::string& message) const;
  const std::string& path() const { return path_; }

 private:
  template <class T>
  T convert(const boost::json::value& v, std::string_view key, const Bounds<T>& b) const {
    T out{};
    try {
      detail::read_value(v, out);
    } catch (const detail::Mismatch& m) {
      fail(key, "expected " + m.expected + ", got " + describe(v));
    } catch (const UnitError& e) {
      fail(key, std::string(e.what()));
    }
    if (b.lo && out < *b.lo)
      fail(key, "must be at least " + detail::show(*b.lo) + ", got " + detail::show(out));
    if (b.hi && out > *b.hi)
      fail(key, "must be at most " + detail::show(*b.hi) + ", got " + detail::show(out));
    return out;
  }
  const boost::json::value* take(std::string_view key);
  static std::string kind_of(const boost::json::value& v);
  static std::string describe(const boost::json::value& v);

  const ConfigDoc& doc_;
  const boost::json::object* obj_;
  std::string path_;
  std::set<std::string, std::less<>> taken_;
};

// Writes every field (defaults filled in) into a JSON object, in declaration order.
class JsonWriter {
 public:
  template <class T>
  void field(std::string_view key, const T& ref, std::string_view, const Bounds<T>& = {}) {
    obj_[key] = detail::write_value(ref);
  }
  template <class T>
  void field(std::string_view key, const std::vector<T>& ref, std::string_view,
             const Bounds<T>& = {}) {
    boost::json::array a;
    for (const T& x : ref)
      a.push_back(detail::write_value(x));
    obj_[key] = std::move(a);
  }
  template <class T>
  void field(std::string_view key, const std::optional<T>& ref, std::string_view desc,
             const Bounds<T>& b = {}) {
    if (ref) field(key, *ref, desc, b);
  }
  template <class T>
  void field(std::string_view key, const std::optional<std::vector<T>>& ref, std::string_view desc,
             const Bounds<T>& b = {}) {
    if (ref) field(key, *ref, desc, b);
  }
  template <class E>
  void choice(std::string_view key, const E& ref, std::string_view,
              std::span<const EnumName<E>> names) {
    obj_[key] = enum_name(names, ref);
  }
  template <class E>
  void choice(std::string_view key, const std::optional<E>& ref, std::string_view desc,
              std::span<const EnumName<E>> names) {
    if (ref) choice(key, *ref, desc, names);
  }
  template <class S>
  void section(std::string_view key, S& sub, std::string_view) {
    JsonWriter child;
    sub.visit(child);
    obj_[key] = std::move(child.obj_);
  }
  template <class S>
  void list(std::string_view key, std::vector<S>& ref, std::string_view) {
    boost::json::array a;
    for (S& s : ref) {
      JsonWriter child;
      s.visit(child);
      a.push_back(std::move(child.obj_));
    }
    obj_[key] = std::move(a);
  }
  boost::json::object take() { return std::move(obj_); }

 private:
  boost::json::object obj_;
};

// One row of the reference documentation.
struct ParamDoc {
  std::string path, type, default_value, allowed, desc;
};

// Lists every parameter with its type, default, allowed values and description.
class DocWriter {
 public:
  explicit DocWriter(std::string prefix = {}) : prefix_(std::move(prefix)) {}
  template <class T>
  void field(std::string_view key, const T& ref, std::string_view desc, const Bounds<T>& b = {}) {
    std::string allowed;
    if (b.lo) allowed += ">= " + detail::show(*b.lo);
    if (b.hi) allowed += std::string(allowed.empty() ? "" : ", ") + "<= " + detail::show(*b.hi);
    rows_.push_back({join_path(prefix_, key), short_type<T>(),
                     std::is_floating_point_v<T> ? detail::show(ref)
                                                 : boost::json::serialize(detail::write_value(ref)),
                     allowed, std::string(desc)});
  }
  template <class T>
  void field(std::string_view key, const std::vector<T>& ref, std::string_view desc,
             const Bounds<T>& b = {}) {
    JsonWriter w;
    w.field(key, ref, desc, b);
    std::string allowed;
    if (b.lo) allowed += "each >= " + detail::show(*b.lo);
    if (b.hi)
      allowed += std::string(allowed.empty() ? "each " : ", ") + "<= " + detail::show(*b.hi);
    rows_.push_back({join_path(prefix_, key), "list of " + short_type<T>(),
                     boost::json::serialize(w.take()[key]), allowed, std::string(desc)});
  }
  template <class T>
  void field(std::string_view key, const std::optional<T>& ref, std::string_view desc,
             const Bounds<T>& b = {}) {
    T value = ref ? *ref : T{};
    field(key, value, desc, b);
    rows_.back().type += " (optional)";
    rows_.back().default_value = ref ? rows_.back().default_value : "";
  }
  template <class T>
  void field(std::string_view key, const std::optional<std::vector<T>>& ref, std::string_view desc,
             const Bounds<T>& b = {}) {
    std::vector<T> value = ref ? *ref : std::vector<T>{};
    field(key, value, desc, b);
    rows_.back().type += " (optional)";
    rows_.back().default_value = "";
  }
  template <class E>
  void choice(std::string_view key, const std::optional<E>& ref, std::string_view desc,
              std::span<const EnumName<E>> names) {
    E value = ref ? *ref : names.front().value;
    choice(key, value, desc, names);
    rows_.back().default_value = ref ? rows_.back().default_value : "";
  }
  template <class S>
  void list(std::string_view key, std::vector<S>&, std::string_view desc) {
    rows_.push_back({join_path(prefix_, key), "list", "[]", "", std::string(desc)});
    DocWriter child(join_path(prefix_, key) + "[]");
    S s{};
    s.visit(child);
    for (auto& r : child.rows_)
      rows_.push_back(std::move(r));
  }
  template <class E>
  void choice(std::string_view key, const E& ref, std::string_view desc,
              std::span<const EnumName<E>> names) {
    std::string allowed;
    for (const auto& n : names)
      allowed += (allowed.empty() ? "" : ", ") + std::string(n.name);
    rows_.push_back({join_path(prefix_, key), "choice",
                     "\"" + std::string(enum_name(names, ref)) + "\"", allowed, std::string(desc)});
  }
  template <class S>
  void section(std::string_view key, S& sub, std::string_view desc) {
    rows_.push_back({join_path(prefix_, key), "section", "", "", std::string(desc)});
    DocWriter child(join_path(prefix_, key));
    sub.visit(child);
    for (auto& r : child.rows_)
      rows_.push_back(std::move(r));
  }
  const std::vector<ParamDoc>& rows() const { return rows_; }
  std::string markdown() const;

 private:
  template <class T>
  static std::string short_type() {
    if constexpr (std::is_same_v<T, bool>)
      return "bool";
    else if constexpr (std::is_integral_v<T>)
      return "integer";
    else if constexpr (std::is_floating_point_v<T>)
      return "number";
    else if constexpr (std::is_same_v<T, std::string>)
      return "string";
    else if constexpr (std::is_same_v<T, Time>)
      return "time";
    else if constexpr (std::is_same_v<T, Bytes>)
      return "size";
    else if constexpr (std::is_same_v<T, Bandwidth>)
      return "bandwidth";
    else if constexpr (std::is_same_v<T, Frequency>)
      return "frequency";
    else
      return "length";
  }
  std::string prefix_;
  std::vector<ParamDoc> rows_;
};

}  // namespace podsim::config

// Pretty JSON text with readable numbers (812.5, not Boost.JSON's 8.125E2): one format for
// every JSON file podsim writes but the --trace timeline (Chrome's trace format, written by
// sim/core/timeline.cpp). PrettyJson streams it (stats.json has ~180 K stats on the
// 1,024-GPU pod: writing them as they are visited skips a document of them); to_pretty_json
// writes a Boost.JSON document through it.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::config {

// Appends to `out`: objects one member per line, indented by two spaces a level; arrays of
// scalars on one line ("[1, 2]"), other arrays one element per line; doubles as fmt's
// shortest round-trip form ("null" if not finite); strings escaped as Boost.JSON does. The
// caller nests begin/end calls and gives a key before each value of an object; a call out of
// that order (a key in an array, a container in a one-line array, an end that closes the
// wrong kind) throws std::logic_error.
class PrettyJson {
 public:
  explicit PrettyJson(std::string& out) : out_(out) {}

  void begin_object();
  void end_object();
  // `one_line`: the array holds only scalars, written on one line.
  void begin_array(bool one_line);
  void end_array();
  void key(std::string_view k);

  void value(std::uint64_t v);
  void value(std::int64_t v);
  void value(double v);
  void value(bool v);
  void value(std::string_view v);
  void value(const char* v) { value(std::string_view(v)); }
  void value(const std::string& v) { value(std::string_view(v)); }
  void null();
  // Any Boost.JSON value, containers included.
  void value(const boost::json::value& v);

  template <class T>
  void member(std::string_view k, const T& v) {
    key(k);
    value(v);
  }

 private:
  void before_value();
  [[noreturn]] static void misuse(const char* what);
  void pad(std::size_t levels) { out_.append(levels * 2, ' '); }
  void quoted(std::string_view s);

  struct Level {
    bool array = false, one_line = false, empty = true;
  };
  std::string& out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

std::string to_pretty_json(const boost::json::value& v);

}  // namespace podsim::config

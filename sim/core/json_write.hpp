// Pretty JSON text with readable numbers (812.5, not Boost.JSON's 8.125E2): one format for
// every JSON file podsim writes but the --trace timeline (Chrome's trace format, written by
// sim/core/timeline.cpp). PrettyJson streams it (stats.json has ~180 K stats on the
// 1,024-GPU pod: writing them as they are visited skips a document of them); to_pretty_json
// writes a Boost.JSON document through it.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <functional>
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

  // From now on, before each key and after each splice, hands the text so far to `drain` once
  // it holds `bytes` or more; `drain` writes it somewhere and empties it. A long document
  // (stats.json) is then written in pieces instead of held whole.
  void drain_every(std::size_t bytes, std::function<void(std::string&)> drain) {
    drain_at_ = bytes;
    drain_ = std::move(drain);
  }

  void begin_object();
  void end_object();
  // `one_line`: the array holds only scalars, written on one line.
  void begin_array(bool one_line);
  void end_array();
  void key(std::string_view k);

  // Pieces of one object written apart (a split run's ranks each write their components'
  // stats): a writer that has written nothing continues an object `depth` levels deep that
  // already has members, so each member it writes begins with the comma before it; the
  // object's own writer splices that text in among its members. Nothing needs closing.
  void continue_object(std::size_t depth);
  void splice_members(std::string_view continued);
  // How many objects and arrays are open (or continued).
  std::size_t depth() const { return levels_.size(); }

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
  std::size_t drain_at_ = SIZE_MAX;
  std::function<void(std::string&)> drain_;
};

std::string to_pretty_json(const boost::json::value& v);

}  // namespace podsim::config

// Golden results for regression runs (plain C++ over stats.json).
//
// A golden file keeps, for one shipped config run briefly, the condensed stats and a digest
// of the full stats.json. Condensing folds components of one kind together: a key's numbered
// path parts become '*' (pod.gpu12.vram.reads -> pod.gpu*.vram.reads), and the stats of one
// folded key combine (counters and series add; formulas keep min, max and sum; distributions
// keep count, min, max and mean; breakdowns keep samples and mean parts). Keys without numbers
// (pod.summary.*) are kept whole. So a 1,024-GPU pod's golden stays small and readable, the
// digest still catches a change anywhere, and a difference names what changed.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <vector>

namespace podsim::tools {

// "pod.gpu12.port3.tx" -> "pod.gpu*.port*.tx"; parts that are only digits or have no digits
// at their end stay as they are.
std::string fold_key(const std::string& key);

// `stats` is stats.json's "stats" object.
boost::json::object condense_stats(const boost::json::object& stats);

// A digest of every stat's values (units and descriptions left out): 16 hex digits.
std::string stats_digest(const boost::json::object& stats);

struct Difference {
  std::string key;     // condensed key and field, e.g. "pod.gpu*.vram.reads.value"
  std::string golden;  // "(absent)" when missing there
  std::string actual;
};

// Integers must be equal; other numbers agree to a relative 1e-9.
std::vector<Difference> compare_condensed(const boost::json::object& golden,
                                          const boost::json::object& actual);

}  // namespace podsim::tools

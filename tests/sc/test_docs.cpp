// docs/architecture.md's hop-by-hop table names real things: every module and event queue in
// it exists in the pod it describes, every breakdown part is one the agent reports and the rows
// follow a remote load's path hop by hop, every config key is in the config reference.
#include <catch2/catch.hpp>

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <regex>

#include "sim/core/timeline.hpp"

#include "tests/support/in_process_pod.hpp"
#include "tests/support/run_podsim.hpp"

using namespace podsim;

TEST_CASE("docs/architecture.md's hop table names the modules, queues, parts and keys of the pod",
          "[docs]") {
  const std::string doc = test::slurp(test::source_path("docs/architecture.md"));
  const auto begin = doc.find("<!-- hop-table:begin -->");
  const auto end = doc.find("<!-- hop-table:end -->");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  const std::string table = doc.substr(begin, end - begin);
  const std::string reference = test::slurp(test::source_path("docs/config-reference.md"));

  Pod pod("pod", test::config_with({"pod.gpus=2"}));
  const std::vector<std::string> queues = pod.events().queue_order();
  const std::vector<std::string> parts = ComputeAgent::breakdown_parts();

  const std::regex token("`([^`]+)`");
  std::size_t modules = 0, queues_named = 0, parts_named = 0, keys = 0;
  std::vector<std::string> path;  // breakdown parts, in the table's order
  for (auto it = std::sregex_iterator(table.begin(), table.end(), token);
       it != std::sregex_iterator(); ++it) {
    const std::string t = (*it)[1].str();
    INFO(t);
    if (t.rfind("pod.", 0) == 0) {
      const bool module = sc_core::sc_find_object(t.c_str()) != nullptr;
      const bool queue = std::find(queues.begin(), queues.end(), t) != queues.end();
      CHECK((module || queue));
      (module ? modules : queues_named) += 1;
    } else if (t.rfind("req.", 0) == 0 || t.rfind("resp.", 0) == 0) {
      CHECK(std::find(parts.begin(), parts.end(), t) != parts.end());
      path.push_back(t);
      ++parts_named;
    } else {
      CHECK(reference.find("`" + t + "`") != std::string::npos);  // a config key or section
      ++keys;
    }
  }
  // The rows follow a real remote load through one switch, hop by hop, there and back: the
  // hops a sampled load of gpu0's from gpu1 went through, in order, from the run's timeline.
  Timeline timeline(Timeline::Options{1, 100000});
  pod.set_timeline(&timeline);
  pod.run();
  const auto trace = boost::json::parse(timeline.to_json(2)).as_object();
  std::map<std::string, std::vector<std::string>> accesses;  // by id: its name, then its hops
  for (const auto& e : trace.at("traceEvents").as_array()) {
    const auto& o = e.as_object();
    if (o.at("ph") != "b" || !o.contains("cat") || o.at("cat") != "access" || o.at("pid") != 0)
      continue;
    accesses[boost::json::serialize(o.at("id"))].push_back(std::string(o.at("name").as_string()));
  }
  std::vector<std::string> load;
  for (const auto& [id, names] : accesses)
    if (names.front().rfind("load", 0) == 0 && names.front().find("gpu1") != std::string::npos) {
      load.assign(names.begin() + 1, names.end());
      break;
    }
  REQUIRE_FALSE(load.empty());
  CHECK(path == load);
  // The table is there and uses each kind of name.
  CHECK(modules >= 8);
  CHECK(queues_named >= 8);
  CHECK(parts_named >= 10);
  CHECK(keys >= 10);
}

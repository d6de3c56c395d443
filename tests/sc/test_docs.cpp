// docs/architecture.md's hop-by-hop table names real things: every module and event queue in
// it exists in the pod it describes, every breakdown part is one the agent reports and the rows
// follow a remote load's path hop by hop, every config key is in the config reference.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>

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
  // The rows follow a remote load through one switch, hop by hop, there and back.
  const std::vector<std::string> through_one_switch{
      "req.issue",   "req.gpuvm",    "req.port_tx",  "req.link", "req.switch",
      "req.link",    "req.port_rx",  "req.npa_mmu",  "req.vram", "resp.port_tx",
      "resp.switch", "resp.port_rx", "resp.complete"};
  CHECK(path == through_one_switch);
  // The table is there and uses each kind of name.
  CHECK(modules >= 8);
  CHECK(queues_named >= 8);
  CHECK(parts_named >= 10);
  CHECK(keys >= 10);
}

// A scenario's steps, read from a config and typed (sim/pod/steps.hpp): each op comes out as
// its own alternative with exactly its fields; a key an op does not take, or a missing one, is
// a config error naming the key path.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "sim/core/config_io.hpp"
#include "sim/pod/pod_config_io.hpp"
#include "sim/pod/steps.hpp"

using namespace podsim;
using config::ConfigDoc;
using config::ConfigError;

namespace {

PodConfig read_steps(const std::string& steps) {
  return read_pod_config(ConfigDoc::from_text(
      R"({"pod": {"gpus": 2}, "workload": {"kind": "scenario", "steps": )" + steps + "}}",
      "steps.json"));
}

ConfigError error_of(const std::string& steps) {
  try {
    read_steps(steps);
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("expected a config error for " << steps);
  return ConfigError("", "", "");
}

template <class T>
const T& as(const Step& s) {
  REQUIRE(std::holds_alternative<T>(s.kind));
  return std::get<T>(s.kind);
}

}  // namespace

TEST_CASE("a scenario's steps come out typed: one alternative per op, with its fields",
          "[config][scenario]") {
  const PodConfig cfg = read_steps(R"([
    {"op": "alloc", "size": "8KiB", "name": "b", "at": "2us"},
    {"op": "alloc", "process": 2, "size": "4KiB", "name": "g", "domain": "gtt",
     "expect": "EOPNOTSUPP"},
    {"op": "export", "buffer": "b", "name": "h"},
    {"op": "send_handle", "handle": "h", "to": 1},
    {"op": "send_handle", "handle": "h", "to": 1, "as": "h2"},
    {"op": "import", "gpu": 1, "handle": "h2", "name": "fd", "retries": 5,
     "retry_interval": "3us"},
    {"op": "map", "gpu": 1, "fd": "fd", "name": "m"},
    {"op": "map", "buffer": "b", "name": "local"},
    {"op": "access", "gpu": 1, "mappings": ["m"], "accesses": 10, "read_fraction": 0.25},
    {"op": "close_fd", "gpu": 1, "fd": "fd"},
    {"op": "unmap", "gpu": 1, "mapping": "m"},
    {"op": "cpu_map", "buffer": "b", "expect": "EINVAL"},
    {"op": "close", "buffer": "b"},
    {"op": "wait", "gpu": 1, "for": "5us"},
    {"op": "barrier", "name": "end"},
    {"op": "exit", "gpu": 1},
    {"op": "reset_node", "gpu": 1, "down_for": "20us"}
  ])");
  const std::vector<Step> steps = to_steps(cfg.workload.steps);
  REQUIRE(steps.size() == 17);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    INFO("step " << i);
    CHECK(steps[i].op() == *cfg.workload.steps[i].op);
  }
  CHECK(op_name(steps[3].op()) == "send_handle");

  // The common part: defaults, and what a step sets.
  CHECK(steps[0].common.at == Time::us(2));
  CHECK(steps[0].common.gpu == 0);
  CHECK(steps[0].common.process == 1);
  CHECK(steps[0].common.expect == driver::Errno::Ok);
  CHECK(steps[0].common.retries == 0);
  CHECK(steps[0].common.retry_interval == Time::us(10));
  CHECK_FALSE(steps[2].common.at);
  CHECK(steps[1].common.process == 2);
  CHECK(steps[1].common.expect == driver::Errno::OpNotSupp);
  CHECK(steps[5].common.gpu == 1);
  CHECK(steps[5].common.retries == 5);
  CHECK(steps[5].common.retry_interval == Time::us(3));
  CHECK(steps[11].common.expect == driver::Errno::Inval);

  // Each op's own fields; defaults resolved (alloc's domain, send_handle's name at the peer).
  CHECK(as<AllocStep>(steps[0]).size == Bytes::KiB(8));
  CHECK(as<AllocStep>(steps[0]).name == "b");
  CHECK(as<AllocStep>(steps[0]).domain == AllocDomain::Vram);
  CHECK(as<AllocStep>(steps[1]).domain == AllocDomain::Gtt);
  CHECK(as<ExportStep>(steps[2]).buffer == "b");
  CHECK(as<ExportStep>(steps[2]).name == "h");
  CHECK(as<SendHandleStep>(steps[3]).handle == "h");
  CHECK(as<SendHandleStep>(steps[3]).to == 1);
  CHECK(as<SendHandleStep>(steps[3]).as == "h");
  CHECK(as<SendHandleStep>(steps[4]).as == "h2");
  CHECK(as<ImportStep>(steps[5]).handle == "h2");
  CHECK(as<ImportStep>(steps[5]).name == "fd");
  CHECK(as<MapStep>(steps[6]).from == MapStep::From::Fd);
  CHECK(as<MapStep>(steps[6]).source == "fd");
  CHECK(as<MapStep>(steps[6]).name == "m");
  CHECK(as<MapStep>(steps[7]).from == MapStep::From::Buffer);
  CHECK(as<MapStep>(steps[7]).source == "b");
  CHECK(as<MapStep>(steps[7]).name == "local");
  const AccessStep& acc = as<AccessStep>(steps[8]);
  CHECK(acc.mappings == std::vector<std::string>{"m"});
  CHECK(acc.accesses == std::uint64_t{10});
  CHECK(acc.read_fraction == 0.25);
  CHECK_FALSE(acc.duration);
  CHECK_FALSE(acc.outstanding);
  CHECK_FALSE(acc.access_size);
  CHECK(as<CloseFdStep>(steps[9]).fd == "fd");
  CHECK(as<UnmapStep>(steps[10]).mapping == "m");
  CHECK(as<CpuMapStep>(steps[11]).buffer == "b");
  CHECK(as<CloseStep>(steps[12]).buffer == "b");
  CHECK(as<WaitStep>(steps[13]).for_ == Time::us(5));
  CHECK(as<BarrierStep>(steps[14]).name == "end");
  CHECK(std::holds_alternative<ExitStep>(steps[15].kind));
  CHECK(as<ResetNodeStep>(steps[16]).down_for == Time::us(20));
  CHECK(steps[16].common.gpu == 1);
}

TEST_CASE("a key a step's op does not take, or one it needs and lacks, is a config error",
          "[config][scenario]") {
  struct Case {
    const char* steps;
    const char* path;
    const char* says;
  };
  for (const Case& c : {
           Case{R"([{"op": "exit", "name": "x"}])", "workload.steps.0.name",
                "a \"exit\" step takes no \"name\""},
           Case{R"([{"op": "wait", "for": "1us", "down_for": "1us"}])", "workload.steps.0.down_for",
                "a \"wait\" step takes no \"down_for\""},
           Case{R"([{"op": "alloc", "size": "4KiB", "name": "b"},)"
                R"( {"op": "map", "buffer": "b", "name": "m"},)"
                R"( {"op": "access", "mappings": ["m"], "size": "4KiB"}])",
                "workload.steps.2.size", "a \"access\" step takes no \"size\""},
           Case{R"([{"op": "barrier", "name": "x", "retries": 2, "to": 1}])", "workload.steps.0.to",
                "a \"barrier\" step takes no \"to\""},
           Case{R"([{"op": "export", "buffer": "b"}])", "workload.steps.0.op",
                "a \"export\" step needs \"name\""},
           Case{R"([{"op": "reset_node"}])", "workload.steps.0.op",
                "a \"reset_node\" step needs \"down_for\""},
           Case{R"([{"op": "map", "name": "m"}])", "workload.steps.0.op",
                "a \"map\" step needs either \"fd\" or \"buffer\""},
           Case{R"([{"gpu": 1}])", "workload.steps.0.op", "every step needs an op"},
           Case{R"([{"op": "reset_node", "down_for": "1us", "process": 2}])",
                "workload.steps.0.process",
                "a \"reset_node\" step is the pod's: it takes no process"},
           Case{R"([{"op": "fault", "fault": "firmware_drop", "expect": "ETIME"}])",
                "workload.steps.0.expect", "it returns no errno to expect"},
           Case{R"([{"op": "signal", "to_process": 1, "retries": 3}])", "workload.steps.0.retries",
                "it is never retried"},
           Case{R"([{"op": "vpod_commit", "members": [0, 5]}])", "workload.steps.0.members.1",
                "GPU 5 does not exist"},
           Case{R"([{"op": "vpod_commit", "members": [0, 1, 0]}])", "workload.steps.0.members.2",
                "GPU 0 is listed twice"},
           Case{R"([{"op": "vpod_commit", "members": []}])", "workload.steps.0.members",
                "at least one member"},
           Case{R"([{"op": "vpod_commit", "members": [0], "vpod_size": 0}])",
                "workload.steps.0.vpod_size", "at least 1"},
           Case{R"([{"op": "ppod_commit"}])", "workload.steps.0.op",
                "a \"ppod_commit\" step needs \"ppod_size\""},
           Case{R"([{"op": "activate", "members": [0]}])", "workload.steps.0.members",
                "a \"activate\" step takes no \"members\""},
           Case{R"([{"op": "fault", "fault": "message_delay"}])", "workload.steps.0.op",
                "a \"fault\" step needs \"for\""},
       }) {
    INFO(c.steps);
    const ConfigError e = error_of(c.steps);
    CHECK(e.source() == "steps.json");
    CHECK(e.path() == c.path);
    CHECK_THAT(e.message(), Catch::Contains(c.says));
  }
}

TEST_CASE("a step built in code without a key its op needs is not typed", "[scenario]") {
  StepConfig s;
  s.op = StepOp::Import;
  s.handle = "h";
  CHECK_THROWS_WITH(to_step(s), Catch::Contains("a \"import\" step needs \"name\""));
  s.name = "fd";
  CHECK(std::get<ImportStep>(to_step(s).kind).name == "fd");
  CHECK_THROWS_AS(to_step(StepConfig{}), std::invalid_argument);
}

// The layers in the folders (tests/layers.txt): the source tree follows them, and the check
// catches an include that crosses a layer the wrong way.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/layer_check.hpp"

using namespace podsim;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const fs::path& root, const std::string& path, const std::string& text) {
  fs::create_directories((root / path).parent_path());
  std::ofstream(root / path) << text;
}

const char* kRules = R"(
layer core sim/core
layer kernel sim/kernel
components component models fabric driver_model
layer top sim/pod
interface models/mmu/pte.hpp
interface models/mmu/bad_iface.hpp
plain sim/core driver_model models/mmu
generated models/mmu/pte.pb.h models/mmu/pte.proto
generated fabric/gone.pb.h fabric/gone.proto
)";

}  // namespace

TEST_CASE("every include of the source tree follows the layers in tests/layers.txt", "[layers]") {
  const fs::path root = PODSIM_SOURCE_DIR;
  const auto rules = layers::parse_rules(read(root / "tests/layers.txt"), "tests/layers.txt");
  REQUIRE(rules.layers.size() >= 4);
  const auto violations = layers::check(root.string(), rules);
  std::string all;
  for (const auto& v : violations)
    all += v + "\n";
  INFO(all);
  CHECK(violations.empty());
}

TEST_CASE("the layer check names each include that crosses a layer the wrong way", "[layers]") {
  const fs::path root =
      fs::temp_directory_path() / ("podsim-layer-check-" + std::to_string(::getpid()));
  fs::remove_all(root);
  write(root, "sim/core/units.hpp", "#include <cstdint>\n");
  write(root, "sim/kernel/queue.hpp", "#include <systemc>\n#include \"sim/core/units.hpp\"\n");
  // Allowed: down a layer, within a component, a declared interface.
  write(root, "models/mmu/pte.hpp", "#include \"sim/core/units.hpp\"\n");
  write(root, "models/vram/vram.hpp",
        "#include \"sim/kernel/queue.hpp\"\n#include \"models/mmu/pte.hpp\"\n");
  write(root, "driver_model/env.hpp", "#include \"models/mmu/pte.hpp\"\n");
  write(root, "sim/pod/pod.hpp", "#include \"models/vram/vram.hpp\"\n#include \"fabric/x.hpp\"\n");
  write(root, "fabric/x.hpp", "#include \"sim/kernel/queue.hpp\"\n");
  // Not allowed:
  write(root, "sim/core/bad_up.hpp", "\n#include \"sim/kernel/queue.hpp\"\n");       // up
  write(root, "fabric/bad_across.hpp", "#include \"models/vram/vram.hpp\"\n");       // across
  write(root, "driver_model/bad_sc.cpp", "#include \"fabric/x.hpp\"\n");             // across, SC
  write(root, "models/mmu/bad_plain.hpp", "#include <tlm>\n");                       // plain
  write(root, "sim/kernel/bad_top.cpp", "#include \"sim/pod/pod.hpp\"\n");           // up
  write(root, "fabric/bad_relative.cpp", "#include \"../models/vram/vram.hpp\"\n");  // across
  write(root, "sim/extra/helper.hpp", "#include \"models/vram/vram.hpp\"\n");        // in no layer
  write(root, "fabric/bad_unlisted.inl", "#include \"sim/extra/helper.hpp\"\n");
  write(root, "fabric/bad_missing.hpp", "#include \"fabric/nowhere.hpp\"\n");
  write(root, "models/mmu/pte_detail.hpp", "#include <cstdint>\n");
  write(root, "models/mmu/bad_iface.hpp", "#include \"models/mmu/pte_detail.hpp\"\n");
  write(root, "fabric/bad_angle.hpp", "#include <models/vram/vram.hpp>\n#include <vector>\n");
  // A file the build writes from one of the tree is where its source is; one whose source is
  // not in the tree is no file.
  write(root, "models/mmu/pte.proto", "syntax = \"proto3\";\n");
  write(root, "models/vram/uses_pb.cpp", "#include \"models/mmu/pte.pb.h\"\n");
  write(root, "fabric/bad_generated.cpp", "#include \"models/mmu/pte.pb.h\"\n");
  write(root, "fabric/bad_gone.cpp", "#include \"fabric/gone.pb.h\"\n");

  const auto v = layers::check(root.string(), layers::parse_rules(kRules, "rules"));
  std::string all;
  for (const auto& x : v)
    all += x + "\n";
  INFO(all);
  CHECK(v.size() == 15);
  auto has = [&](const std::string& s) { return all.find(s) != std::string::npos; };
  CHECK(
      has("sim/core/bad_up.hpp:2: includes sim/kernel/queue.hpp: layer core must not include "
          "layer kernel (above it)"));
  CHECK(
      has("sim/core/bad_up.hpp:2: includes sim/kernel/queue.hpp: a plain C++ file must not "
          "include SystemC code"));
  CHECK(
      has("fabric/bad_across.hpp:1: includes models/vram/vram.hpp: component fabric must not "
          "include component models except through a declared interface"));
  CHECK(
      has("driver_model/bad_sc.cpp:1: includes fabric/x.hpp: component driver_model must not "
          "include component fabric"));
  CHECK(
      has("driver_model/bad_sc.cpp:1: includes fabric/x.hpp: a plain C++ file must not "
          "include SystemC code"));
  CHECK(has("models/mmu/bad_plain.hpp:1: includes <tlm>: a plain C++ file must not use SystemC"));
  CHECK(
      has("sim/kernel/bad_top.cpp:1: includes sim/pod/pod.hpp: layer kernel must not include "
          "layer top"));
  CHECK(
      has("fabric/bad_relative.cpp:1: includes ../models/vram/vram.hpp: component fabric must "
          "not include component models"));
  CHECK(
      has("fabric/bad_unlisted.inl:1: includes sim/extra/helper.hpp: sim/extra/helper.hpp is "
          "in no layer"));
  CHECK(has("fabric/bad_missing.hpp:1: includes fabric/nowhere.hpp: no such file in the tree"));
  CHECK(
      has("models/mmu/bad_iface.hpp:1: includes models/mmu/pte_detail.hpp: a declared "
          "interface may include only lower layers and other interfaces"));
  CHECK(
      has("fabric/bad_angle.hpp:1: includes <models/vram/vram.hpp>: component fabric must not "
          "include component models"));
  CHECK(
      has("fabric/bad_angle.hpp:1: includes <models/vram/vram.hpp>: a file of the tree is "
          "included in quotes"));
  CHECK(
      has("fabric/bad_generated.cpp:1: includes models/mmu/pte.pb.h: component fabric must not "
          "include component models"));
  CHECK(has("fabric/bad_gone.cpp:1: includes fabric/gone.pb.h: no such file in the tree"));
  fs::remove_all(root);
}

TEST_CASE("every library in CMakeLists.txt links only its own layer or below", "[layers]") {
  const fs::path root = PODSIM_SOURCE_DIR;
  const auto rules = layers::parse_rules(read(root / "tests/layers.txt"), "tests/layers.txt");
  const auto v = layers::check_libraries(read(root / "CMakeLists.txt"), rules, "CMakeLists.txt");
  std::string all;
  for (const auto& x : v)
    all += x + "\n";
  INFO(all);
  CHECK(v.empty());
}

TEST_CASE("the library check names each link that crosses a layer the wrong way", "[layers]") {
  const auto rules = layers::parse_rules(kRules, "rules");
  const char* cmake = R"(
podsim_library(lib_core SOURCES sim/core/a.cpp DEPS fmt::fmt)
podsim_library(lib_kernel SOURCES sim/kernel/q.cpp DEPS lib_core podsim_systemc)
podsim_library(lib_models SOURCES models/vram/v.cpp
               models/mmu/m.cpp DEPS lib_kernel)
podsim_library(lib_fabric SOURCES fabric/x.cpp DEPS lib_kernel lib_models)
podsim_library(lib_pod SOURCES sim/pod/pod.cpp DEPS lib_models lib_fabric)
podsim_library(lib_bad_up SOURCES sim/core/b.cpp DEPS lib_pod)
podsim_library(lib_mixed SOURCES fabric/y.cpp driver_model/d.cpp DEPS lib_core)
podsim_library(lib_lost SOURCES elsewhere/z.cpp DEPS lib_core)
)";
  const auto v = layers::check_libraries(cmake, rules, "CMakeLists.txt");
  std::string all;
  for (const auto& x : v)
    all += x + "\n";
  INFO(all);
  CHECK(v.size() == 4);
  auto has = [&](const std::string& s) { return all.find(s) != std::string::npos; };
  CHECK(
      has("CMakeLists.txt: library lib_fabric links lib_models: component fabric must not "
          "link component models"));
  CHECK(
      has("CMakeLists.txt: library lib_bad_up links lib_pod: layer core must not link layer "
          "top (above it)"));
  CHECK(has("CMakeLists.txt: library lib_mixed mixes components fabric and driver_model"));
  CHECK(has("CMakeLists.txt: library lib_lost: source elsewhere/z.cpp is in no layer"));
}

TEST_CASE("a malformed layers file is an error naming the line", "[layers]") {
  CHECK_THROWS_WITH(layers::parse_rules("layer core sim/core\nlayers x y\n", "L"),
                    Catch::Contains("L:2: unknown directive 'layers'"));
  CHECK_THROWS_WITH(layers::parse_rules("layer core\n", "L"), Catch::Contains("L:1: expected"));
  CHECK_THROWS_WITH(layers::parse_rules("# nothing\n", "L"), Catch::Contains("no layers"));
}

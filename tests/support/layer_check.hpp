// The layer check: every `#include` of the source tree against the layers declared in
// tests/layers.txt (plain C++; tests/unit/test_layers.cpp runs it in CI).
//
// Every source file (.hpp .h .hh .cpp .cc .cxx .ipp .inl .tpp) under a layer's folders is read.
// A quoted include is resolved next to the including file, then from the root; one that names
// no file of the tree, or a file in no layer, is a violation. An include in <...> that names a
// file of the tree (from the root) is checked the same way, and is itself a violation (tree
// files are included in quotes). A file belongs to the layer whose
// folder is the longest prefix of its path. It may include files of a lower layer, or of its
// own layer; in the components' layer (declared with `components`), only of its own component
// (the folder listed), or a header declared as an `interface`, and an interface itself may
// include only lower layers and other interfaces. A file under a `plain` prefix must not be
// SystemC: it may not include <systemc>, <tlm>, <tlm_utils/...>, nor, directly or through what
// it includes, a file that does. Files outside every layer (tests, scripts) are not checked.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace podsim::layers {

struct Rules {
  struct Layer {
    std::string name;
    std::vector<std::string> folders;
    bool components = false;  // each folder is a component: they include each other only
                              // through interfaces
  };
  std::vector<Layer> layers;  // bottom up
  std::vector<std::string> interfaces;
  std::vector<std::string> plain;
  // Files the build writes (into its own tree, on the include path) from a source of the tree:
  // by path, the source they are made from. Including one counts as including a file of the
  // tree at that path.
  std::map<std::string, std::string> generated;
};

// Reads the rules (`layer NAME FOLDER...`, `components NAME FOLDER...`, `interface PATH`,
// `plain PREFIX...`, `generated PATH FROM`; `#` comments). Throws std::runtime_error naming the
// line on a bad one.
Rules parse_rules(const std::string& text, const std::string& file_name);

// Every violation under `root` (the source tree), one line each: "FILE:LINE: includes X:
// why". Files are read from `root`/FOLDER for every layer's folders.
std::vector<std::string> check(const std::string& root, const Rules& rules);

// The libraries follow the layers too: every `podsim_library(NAME SOURCES ... DEPS ...)` of a
// CMakeLists text sits where its highest source is; it may link podsim libraries of its own
// layer or below, and in the components' layer only its own component's. A library mixing
// components, or a source in no layer, is a violation too.
std::vector<std::string> check_libraries(const std::string& cmake_text, const Rules& rules,
                                         const std::string& file_name);

}  // namespace podsim::layers

#include "tests/support/layer_check.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace podsim::layers {

namespace fs = std::filesystem;

namespace {

bool under(const std::string& path, const std::string& prefix) {
  if (path.compare(0, prefix.size(), prefix) != 0) return false;
  // A folder matches its files; a path prefix ("models/vram/page_allocator") its .hpp/.cpp.
  return path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/' ||
         path[prefix.size()] == '.';
}

struct Place {
  std::size_t layer;
  std::string folder;  // the layer's folder the file is in (its component)
};

std::optional<Place> place_of(const Rules& rules, const std::string& path) {
  std::optional<Place> best;
  std::size_t best_len = 0;
  for (std::size_t l = 0; l < rules.layers.size(); ++l)
    for (const std::string& f : rules.layers[l].folders)
      if (under(path, f) && f.size() > best_len) {
        best = Place{l, f};
        best_len = f.size();
      }
  return best;
}

struct Include {
  int line;
  std::string target;  // as written
  bool system;         // <...>
};

std::vector<Include> includes_of(const fs::path& file) {
  static const std::regex re(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  std::vector<Include> out;
  std::ifstream in(file);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::smatch m;
    if (std::regex_search(line, m, re)) out.push_back({n, m[2].str(), m[1].str() == "<"});
  }
  return out;
}

bool systemc_header(const std::string& h) {
  return h == "systemc" || h == "systemc.h" || h == "tlm" || h == "tlm.h" ||
         h.rfind("tlm_utils/", 0) == 0 || h.rfind("sysc/", 0) == 0 || h.rfind("tlm_core/", 0) == 0;
}

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;)
    w.push_back(x);
  return w;
}

}  // namespace

Rules parse_rules(const std::string& text, const std::string& file_name) {
  Rules r;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const std::vector<std::string> w = split(line);
    if (w.empty()) continue;
    auto bad = [&](const std::string& what) {
      return std::runtime_error(file_name + ":" + std::to_string(n) + ": " + what);
    };
    if (w[0] == "layer" || w[0] == "components") {
      if (w.size() < 3) throw bad("expected '" + w[0] + " NAME FOLDER...'");
      r.layers.push_back({w[1], {w.begin() + 2, w.end()}, w[0] == "components"});
    } else if (w[0] == "interface") {
      if (w.size() != 2) throw bad("expected 'interface PATH'");
      r.interfaces.push_back(w[1]);
    } else if (w[0] == "plain") {
      if (w.size() < 2) throw bad("expected 'plain PREFIX...'");
      r.plain.insert(r.plain.end(), w.begin() + 1, w.end());
    } else if (w[0] == "generated") {
      if (w.size() != 3) throw bad("expected 'generated PATH FROM'");
      r.generated[w[1]] = w[2];
    } else {
      throw bad("unknown directive '" + w[0] +
                "' (expected layer, components, interface, plain or generated)");
    }
  }
  if (r.layers.empty()) throw std::runtime_error(file_name + ": no layers declared");
  return r;
}

namespace {
bool source_file(const fs::path& p) {
  static const std::set<std::string> exts{".hpp", ".h",   ".hh",  ".cpp", ".cc",
                                          ".cxx", ".ipp", ".inl", ".tpp"};
  return exts.count(p.extension().string()) != 0;
}
}  // namespace

std::vector<std::string> check(const std::string& root, const Rules& rules) {
  const fs::path base(root);
  // Every source file of every layer, by path relative to root.
  std::map<std::string, std::vector<Include>> files;
  for (const auto& layer : rules.layers)
    for (const std::string& folder : layer.folders) {
      const fs::path dir = base / folder;
      if (!fs::exists(dir)) continue;
      for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file() && source_file(e.path()))
          files[fs::relative(e.path(), base).generic_string()] = includes_of(e.path());
    }

  // What a quoted include names, as a path relative to root: next to the including file, or
  // from the root (the build's include path); nothing if it is no file of the tree.
  auto resolve = [&](const std::string& from,
                     const std::string& target) -> std::optional<std::string> {
    const fs::path beside = (base / from).parent_path() / target;
    if (fs::is_regular_file(beside))
      return fs::relative(beside.lexically_normal(), base).generic_string();
    if (fs::is_regular_file(base / target))
      return fs::path(target).lexically_normal().generic_string();
    // A file the build writes from a source that is in the tree.
    if (const auto g = rules.generated.find(target);
        g != rules.generated.end() && fs::is_regular_file(base / g->second))
      return target;
    return std::nullopt;
  };
  std::map<std::string, std::vector<std::pair<const Include*, std::optional<std::string>>>>
      resolved;
  // An include in <...> that names a file of the tree (the root is on the include path, so
  // it compiles) is resolved from the root and checked like any other.
  auto resolve_system = [&](const std::string& target) -> std::optional<std::string> {
    if (fs::is_regular_file(base / target))
      return fs::path(target).lexically_normal().generic_string();
    return std::nullopt;
  };
  for (const auto& [file, incs] : files)
    for (const Include& inc : incs)
      resolved[file].push_back(
          {&inc, inc.system ? resolve_system(inc.target) : resolve(file, inc.target)});

  // SystemC-ness: files that include SystemC, then, until nothing changes, files that include
  // one of those (a fixed point: cycles cannot hide anything).
  std::set<std::string> sc;
  for (const auto& [file, incs] : resolved)
    for (const auto& [inc, path] : incs)
      if (inc->system && systemc_header(inc->target)) sc.insert(file);
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [file, incs] : resolved) {
      if (sc.count(file)) continue;
      for (const auto& [inc, path] : incs)
        if (path && sc.count(*path)) {
          sc.insert(file);
          grew = true;
          break;
        }
    }
  }

  auto is_interface = [&](const std::string& f) {
    return std::find(rules.interfaces.begin(), rules.interfaces.end(), f) != rules.interfaces.end();
  };
  std::vector<std::string> out;
  for (const auto& [file, incs] : resolved) {
    const auto from = place_of(rules, file);
    const bool plain = std::any_of(rules.plain.begin(), rules.plain.end(),
                                   [&](const std::string& p) { return under(file, p); });
    for (const auto& [inc, path] : incs) {
      const std::string where = file + ":" + std::to_string(inc->line) + ": includes " +
                                (inc->system ? "<" + inc->target + ">" : inc->target) + ": ";
      if (inc->system && !path) {
        if (plain && systemc_header(inc->target))
          out.push_back(where + "a plain C++ file must not use SystemC");
        continue;
      }
      if (inc->system) out.push_back(where + "a file of the tree is included in quotes, not <...>");
      if (!path) {
        out.push_back(where + "no such file in the tree (write includes from the root)");
        continue;
      }
      const auto to = place_of(rules, *path);
      if (!to) {
        out.push_back(where + *path + " is in no layer (tests/layers.txt)");
        continue;
      }
      if (from) {
        const auto& lf = rules.layers[from->layer];
        const auto& lt = rules.layers[to->layer];
        if (to->layer > from->layer) {
          out.push_back(where + "layer " + lf.name + " must not include layer " + lt.name +
                        " (above it)");
        } else if (to->layer == from->layer && lf.components && to->folder != from->folder &&
                   !is_interface(*path)) {
          out.push_back(where + "component " + from->folder + " must not include component " +
                        to->folder + " except through a declared interface (tests/layers.txt)");
        } else if (to->layer == from->layer && lf.components && is_interface(file) &&
                   !is_interface(*path)) {
          // What other components see of this one stays within its interfaces.
          out.push_back(where +
                        "a declared interface may include only lower layers and other "
                        "interfaces");
        }
      }
      if (plain && sc.count(*path))
        out.push_back(where + "a plain C++ file must not include SystemC code (" + *path +
                      " uses SystemC)");
    }
  }
  return out;
}

std::vector<std::string> check_libraries(const std::string& cmake_text, const Rules& rules,
                                         const std::string& file_name) {
  struct Lib {
    std::string name;
    std::optional<Place> place;  // the highest place of its sources
    std::vector<std::string> deps;
  };
  std::vector<Lib> libs;
  std::vector<std::string> out;
  static const std::regex re(R"(podsim_library\(\s*([A-Za-z0-9_]+)([^)]*)\))");
  for (auto it = std::sregex_iterator(cmake_text.begin(), cmake_text.end(), re);
       it != std::sregex_iterator(); ++it) {
    Lib lib{(*it)[1].str(), std::nullopt, {}};
    bool in_deps = false;
    for (const std::string& w : split((*it)[2].str())) {
      if (w == "SOURCES" || w == "DEPS") {
        in_deps = w == "DEPS";
        continue;
      }
      if (in_deps) {
        lib.deps.push_back(w);
        continue;
      }
      const auto p = place_of(rules, w);
      if (!p) {
        out.push_back(file_name + ": library " + lib.name + ": source " + w +
                      " is in no layer (tests/layers.txt)");
        continue;
      }
      if (lib.place && rules.layers[p->layer].components &&
          rules.layers[lib.place->layer].components && p->layer == lib.place->layer &&
          p->folder != lib.place->folder)
        out.push_back(file_name + ": library " + lib.name + " mixes components " +
                      lib.place->folder + " and " + p->folder);
      if (!lib.place || p->layer > lib.place->layer) lib.place = p;
    }
    libs.push_back(std::move(lib));
  }
  auto find = [&](const std::string& name) -> const Lib* {
    for (const Lib& l : libs)
      if (l.name == name) return &l;
    return nullptr;
  };
  for (const Lib& lib : libs) {
    if (!lib.place) continue;
    const auto& lf = rules.layers[lib.place->layer];
    for (const std::string& d : lib.deps) {
      const Lib* dep = find(d);
      if (!dep || !dep->place) continue;  // not one of ours (fmt::fmt, podsim_systemc, ...)
      const auto& lt = rules.layers[dep->place->layer];
      const std::string where = file_name + ": library " + lib.name + " links " + d + ": ";
      if (dep->place->layer > lib.place->layer)
        out.push_back(where + "layer " + lf.name + " must not link layer " + lt.name +
                      " (above it)");
      else if (dep->place->layer == lib.place->layer && lf.components &&
               dep->place->folder != lib.place->folder)
        out.push_back(where + "component " + lib.place->folder + " must not link component " +
                      dep->place->folder);
    }
  }
  if (libs.empty()) out.push_back(file_name + ": no podsim_library(...) found");
  return out;
}

}  // namespace podsim::layers

#include "sim/pod/pod_config_io.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace podsim {

namespace {
// Routes check() failures with paths relative to the top level.
struct TopLevelChecker {
  const config::JsonReader& r;
  void fail(const std::string& path, const std::string& msg) const { r.fail(path, msg); }
};
}  // namespace

PodConfig read_pod_config(const config::ConfigDoc& doc) {
  PodConfig cfg;
  config::JsonReader r(doc, doc.root(), "");
  cfg.visit(r);
  r.finish();
  TopLevelChecker c{r};
  cfg.check(c);
  return cfg;
}

PodConfig load_pod_config(const std::optional<std::string>& path,
                          const std::vector<std::string>& overrides) {
  // `--set key value` (a space for the '='): the value is taken as the config file. Said
  // before that file is looked for.
  for (const std::string& s : overrides)
    if (s.find('=') == std::string::npos) {
      std::error_code ec;
      const bool value_as_file = path && !std::filesystem::exists(*path, ec);
      throw config::ConfigError(
          "--set " + s, "",
          value_as_file
              ? fmt::format("expected key.path=value: did you mean --set {}={}? (after a space, "
                            "{} was taken as the config file)",
                            s, *path, *path)
              : "expected key.path=value");
    }
  config::ConfigDoc doc = path ? config::ConfigDoc::from_file(*path)
                               : config::ConfigDoc::from_text("{}", "<embedded default pod>");
  for (const std::string& s : overrides)
    doc.apply_override(s);
  try {
    return read_pod_config(doc);
  } catch (const config::ConfigError& e) {
    // `--set key=0,1` for an array: a string to JSON; say how to write the array.
    const std::string& src = e.source();
    const auto eq = src.find('=');
    if (src.rfind("--set ", 0) == 0 && eq != std::string::npos &&
        e.message().find("expected an array") != std::string::npos) {
      const std::string value = src.substr(eq + 1);
      if (!value.empty() && value.front() != '[')
        throw config::ConfigError(src, e.path(),
                                  fmt::format("{} (an array is written in brackets: {}=[{}])",
                                              e.message(), src.substr(6, eq - 6), value));
    }
    throw;
  }
}

boost::json::object write_pod_config(const PodConfig& cfg) {
  config::JsonWriter w;
  PodConfig copy = cfg;
  copy.visit(w);
  return w.take();
}

std::string pod_config_reference() {
  config::DocWriter d;
  PodConfig cfg;
  cfg.visit(d);
  return d.markdown();
}

}  // namespace podsim

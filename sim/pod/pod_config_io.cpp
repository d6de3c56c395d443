#include "sim/pod/pod_config_io.hpp"

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
  config::ConfigDoc doc = path ? config::ConfigDoc::from_file(*path)
                               : config::ConfigDoc::from_text("{}", "<embedded default pod>");
  for (const std::string& s : overrides)
    doc.apply_override(s);
  return read_pod_config(doc);
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

// The config reader: bytes as a config file (ConfigDoc::from_text, then read_pod_config).
// A ConfigError is the expected answer to bad input; anything else escaping, a crash, a
// sanitizer report or a hang is a finding. A config that reads must also round-trip: the
// resolved config (write_pod_config, what `podsim config` prints and a run writes as
// config.json) reads back to the same resolved config.
#include <boost/json/serialize.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_escape.hpp"
#include "sim/pod/pod_config_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  boost::json::object resolved;
  try {
    const auto doc = podsim::config::ConfigDoc::from_text(text, "fuzz.json");
    resolved = podsim::write_pod_config(podsim::read_pod_config(doc));
  } catch (const podsim::config::ConfigError&) {
    return 0;
  } catch (const std::exception& e) {
    podsim::fuzz::escaped(e);
  }
  try {
    const std::string again = boost::json::serialize(resolved);
    const auto doc = podsim::config::ConfigDoc::from_text(again, "resolved.json");
    if (podsim::write_pod_config(podsim::read_pod_config(doc)) != resolved)
      podsim::fuzz::finding("the resolved config does not read back to itself");
  } catch (const podsim::config::ConfigError& e) {
    std::fprintf(stderr, "fuzz: the resolved config does not read: %s\n", e.what());
    std::abort();
  } catch (const std::exception& e) {
    podsim::fuzz::escaped(e);
  }
  return 0;
}

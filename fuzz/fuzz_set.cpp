// --set: each line of the input is one `key.path=value` assignment, applied in order with
// ConfigDoc::apply_override to the embedded default pod (what `podsim run --set ...` does),
// then read with read_pod_config. ConfigError is expected; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_escape.hpp"
#include "sim/pod/pod_config_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  try {
    auto doc = podsim::config::ConfigDoc::from_text("{}", "<embedded default pod>");
    for (int n = 0; n < 16 && !rest.empty(); ++n) {  // a command line has a few --set
      const std::size_t nl = rest.find('\n');
      doc.apply_override(rest.substr(0, nl));
      rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    }
    (void)podsim::read_pod_config(doc);
  } catch (const podsim::config::ConfigError&) {
  } catch (const std::exception& e) {
    podsim::fuzz::escaped(e);
  }
  return 0;
}

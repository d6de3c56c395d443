// The model trace readers: bytes as a JSON model trace (parse_model_trace) or, after a first
// byte 'C' (or 'G', with a groups file of two groups), as a Chakra trace of two ranks whose
// files both hold the rest (parse_chakra_trace), for the default pod's 8 GPUs. ModelTraceError
// is expected; anything else is a finding. A trace that reads has a critical path or none.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_escape.hpp"
#include "sim/pod/chakra_trace.hpp"
#include "sim/pod/model_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  try {
    podsim::ModelTrace t;
    if (size > 0 && (data[0] == 'C' || data[0] == 'G')) {
      const std::string rank = all.substr(1);
      t = podsim::parse_chakra_trace({rank, rank}, "fuzz", 8, 65536,
                                     R"({"1": [0, 1], "2": [1, 0]})",
                                     data[0] == 'G' ? "groups.json" : "");
    } else {
      t = podsim::parse_model_trace(all, "fuzz.json", 8, 65536);
    }
    (void)t.critical_path();
  } catch (const podsim::ModelTraceError&) {
    return 0;
  } catch (const std::exception& e) {
    podsim::fuzz::escaped(e);
  }
  return 0;
}

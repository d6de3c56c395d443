// What a finished run did not measure the way it seems to: the offered load not reached, one
// hop taking most of the latency (with the keys that govern it), a measured window too short
// or not yet steady, accesses not served or retried. Each is a code (stable, for tools) and a
// sentence for the user, with the numbers and what to change. Printed in the summary, written
// to run.json ("warnings"), shown in the report; `podsim run --warnings-as-errors` fails a run
// that has any.
#pragma once

#include <string>
#include <vector>

namespace podsim {

class Pod;

struct RunWarning {
  std::string code;  // offered_load_not_reached, dominant_hop, window_too_short,
                     // window_spans_phases, posted_closed_loop, too_few_accesses,
                     // latency_trending, not_served, posted_lost, retried,
                     // breakdown_incomplete
  std::string text;
};

// `overrides`: the run's --set settings ("key=value"), the study's own knobs.
std::vector<RunWarning> run_warnings(const Pod& pod, const std::vector<std::string>& overrides);

}  // namespace podsim

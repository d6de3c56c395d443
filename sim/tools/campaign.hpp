// podsim campaign: a randomized fault campaign. Each seed makes a scenario of its own (a few
// GPUs exporting, importing, mapping and loading and storing, while buffers are closed under
// that traffic, GPUs are reset at random times, and firmware, pin, map, allocation and ring
// faults and flit errors strike), runs it as its own `podsim run`, and judges how it ended:
// exit 0, or exit 1 with only steps failing (errnos the faults cause, and the steps that
// needed what those did not make), finished, with no invariant violated and nothing left
// held. Anything else (a violation, a leak, a run still busy or unfinished, a crash, a config
// the generator should not have made) is a finding, named with its seed and kept.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace podsim::tools {

struct CampaignOptions {
  std::uint64_t first_seed = 1;
  std::uint64_t seeds = 100;
  unsigned jobs = 1;
  std::string out_dir = "podsim-campaign";
  bool keep = false;                   // keep every run's directory, not only the findings'
  std::vector<std::string> overrides;  // --set for every run (a what-if, a bug put back)
  bool quiet = false;
};

// The scenario config (JSON text) seed `seed` makes: the same for the same seed, always.
std::string campaign_scenario(std::uint64_t seed);

// Exit codes: 0 every run ended cleanly; 1 a finding (listed); 2 bad options.
int campaign_command(const CampaignOptions& opt, std::ostream& out, std::ostream& err);

}  // namespace podsim::tools

// Catch2 inside sc_main: SystemC's main() calls sc_main, which runs the test session.
// SystemC elaborates once per process, so ctest runs each test case in its own process.
// SystemC warnings are turned into exceptions, so a test fails on any of them.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>
#include <systemc>

namespace {
const bool kNoBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0) == 0;
}

int sc_main(int argc, char* argv[]) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_THROW);
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  return Catch::Session().run(argc, argv);
}

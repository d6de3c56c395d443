// Output files are whole or absent (sim/core/files.hpp).
#include <unistd.h>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/core/files.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using podsim::OutputFile;

namespace {
std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("podsim-files-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};
}  // namespace

TEST_CASE("an output file written in pieces appears whole only when committed", "[files]") {
  TempDir t;
  const fs::path p = t.dir / "out.json";
  podsim::write_file(p, "old");
  {
    OutputFile f(p);
    f.write("first ");
    f.write("second");
    CHECK(read(p) == "old");  // the pieces are not in place yet
    f.commit();
    CHECK_THROWS_AS(f.write("x"), std::logic_error);
    CHECK_THROWS_AS(f.commit(), std::logic_error);
  }
  CHECK(read(p) == "first second");
  CHECK(!fs::exists(t.dir / "out.json.tmp"));
}

TEST_CASE("an output file given up before its commit leaves what was there", "[files]") {
  TempDir t;
  const fs::path p = t.dir / "out.json";
  {
    OutputFile f(p);
    f.write("half");
  }
  CHECK(!fs::exists(p));
  CHECK(!fs::exists(t.dir / "out.json.tmp"));
  podsim::write_file(p, "kept");
  {
    OutputFile f(p);
    f.write("half");
  }
  CHECK(read(p) == "kept");
  CHECK(!fs::exists(t.dir / "out.json.tmp"));
}

TEST_CASE("an output file that cannot be written is an error naming it", "[files]") {
  TempDir t;
  CHECK_THROWS_WITH(
      OutputFile(t.dir / "missing" / "out.json"),
      Contains("cannot write") && Contains("missing/out.json.tmp") && Contains("No such file"));
  // A device is written through, never replaced by a regular file.
  if (fs::exists("/dev/full")) {
    OutputFile f("/dev/full");
    CHECK_THROWS_WITH(
        [&] {
          f.write(std::string(1 << 16, 'x'));
          f.commit();
        }(),
        Contains("/dev/full") && Contains("No space"));
    CHECK(fs::is_character_file("/dev/full"));
  }
}

// Writing output files so that a file is either whole or absent: through a temporary file
// beside it, checked (a full disk, a missing directory) and renamed into place. Plain C++.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace podsim {

// One output file written in pieces (a big one need not be held whole in memory first), whole
// or absent: the pieces go to a temporary file beside `path`, which commit() renames into
// place; destroyed before commit(), the temporary file is removed. Something other than a
// regular file at `path` (a symlink, /dev/stdout or /dev/full, a FIFO) is written through,
// never replaced (what was written before a failure stays written there). Every failure
// throws std::runtime_error naming the file and the reason; the file takes nothing more.
class OutputFile {
 public:
  explicit OutputFile(std::filesystem::path path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view bytes);
  void commit();

 private:
  [[noreturn]] void fail(const std::filesystem::path& p);
  std::filesystem::path path_, tmp_;  // tmp_ empty: written through
  std::ofstream f_;
  bool done_ = false;
};

// Writes `bytes` to `path` as one OutputFile.
void write_file(const std::filesystem::path& path, std::string_view bytes);
// Removes `path` if it is a regular file: never a device, a FIFO or a symlink someone named
// as an output (write_file writes through those). Quietly.
void remove_if_regular(const std::filesystem::path& path);

// The whole of a text file `path` (a FIFO or /dev/stdin too, read as a stream), read in
// pieces and stopped early: a NUL byte (never in a text file: /dev/zero, a binary; "PATH:LINE:
// a NUL byte") or more than `max_bytes` (/dev/urandom, a wrong file) throws std::runtime_error
// saying which, as does a directory or a file that cannot be read; each message starts with
// `path`, for the caller to add what the file should have been.
std::string read_text_file(const std::filesystem::path& path, std::size_t max_bytes);

}  // namespace podsim

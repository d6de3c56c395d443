// Writing output files so that a file is either whole or absent: through a temporary file
// beside it, checked (a full disk, a missing directory) and renamed into place. Plain C++.
#pragma once

#include <filesystem>
#include <string_view>

namespace podsim {

// Writes `bytes` to `path`; throws std::runtime_error naming the file and the reason.
void write_file(const std::filesystem::path& path, std::string_view bytes);
// Removes `path` if it is a regular file: never a device, a FIFO or a symlink someone named
// as an output (write_file writes through those). Quietly.
void remove_if_regular(const std::filesystem::path& path);

}  // namespace podsim

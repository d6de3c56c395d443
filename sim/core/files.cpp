#include "sim/core/files.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace podsim {

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  auto fail = [&](const std::filesystem::path& p) {
    const int e = errno;
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw std::runtime_error("cannot write " + p.string() +
                             (e ? ": " + std::string(std::strerror(e)) : ""));
  };
  // Something other than a regular file there (a symlink, /dev/stdout or /dev/full, a FIFO):
  // written through, never replaced by one.
  std::error_code st;
  const auto kind = std::filesystem::symlink_status(path, st).type();
  if (!st && kind != std::filesystem::file_type::regular &&
      kind != std::filesystem::file_type::not_found &&
      kind != std::filesystem::file_type::directory) {
    errno = 0;
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (f) f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (f) f.flush();
    if (!f) fail(path);
    return;
  }
  {
    errno = 0;
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail(tmp);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) fail(tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    errno = ec.value();
    fail(path);
  }
}

void remove_if_regular(const std::filesystem::path& path) {
  std::error_code ignored;
  if (std::filesystem::symlink_status(path, ignored).type() == std::filesystem::file_type::regular)
    std::filesystem::remove(path, ignored);
}

}  // namespace podsim

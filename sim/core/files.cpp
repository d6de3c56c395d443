#include "sim/core/files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace podsim {

OutputFile::OutputFile(std::filesystem::path path) : path_(std::move(path)) {
  std::error_code st;
  const auto kind = std::filesystem::symlink_status(path_, st).type();
  const bool through = !st && kind != std::filesystem::file_type::regular &&
                       kind != std::filesystem::file_type::not_found &&
                       kind != std::filesystem::file_type::directory;
  if (!through) {
    tmp_ = path_;
    tmp_ += ".tmp";
  }
  errno = 0;
  f_.open(through ? path_ : tmp_, std::ios::binary | std::ios::trunc);
  if (!f_) fail(through ? path_ : tmp_);
}

OutputFile::~OutputFile() {
  if (done_ || tmp_.empty()) return;
  f_.close();
  std::error_code ignored;
  std::filesystem::remove(tmp_, ignored);
}

void OutputFile::fail(const std::filesystem::path& p) {
  const int e = errno;
  done_ = true;
  f_.close();
  if (!tmp_.empty()) {
    std::error_code ignored;
    std::filesystem::remove(tmp_, ignored);
  }
  throw std::runtime_error("cannot write " + p.string() +
                           (e ? ": " + std::string(std::strerror(e)) : ""));
}

void OutputFile::write(std::string_view bytes) {
  if (done_) throw std::logic_error("OutputFile: write after commit or failure");
  errno = 0;
  f_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f_) fail(tmp_.empty() ? path_ : tmp_);
}

void OutputFile::commit() {
  if (done_) throw std::logic_error("OutputFile: commit twice, or after a failure");
  errno = 0;
  if (tmp_.empty()) {
    f_.flush();
    if (!f_) fail(path_);
    done_ = true;
    return;
  }
  f_.close();
  if (!f_) fail(tmp_);
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    errno = ec.value();
    fail(path_);
  }
  done_ = true;
}

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  OutputFile f(path);
  f.write(bytes);
  f.commit();
}

void remove_if_regular(const std::filesystem::path& path) {
  std::error_code ignored;
  if (std::filesystem::symlink_status(path, ignored).type() == std::filesystem::file_type::regular)
    std::filesystem::remove(path, ignored);
}

std::string read_text_file(const std::filesystem::path& path, std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::runtime_error(path.string() + ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open it for reading");
  std::string text;
  char chunk[65536];
  while (in.read(chunk, sizeof chunk).gcount() > 0) {
    const std::string_view got(chunk, static_cast<std::size_t>(in.gcount()));
    if (const auto nul = got.find('\0'); nul != std::string_view::npos) {
      const auto line =
          1 + std::count(text.begin(), text.end(), '\n') +
          std::count(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
      throw std::runtime_error(path.string() + ":" + std::to_string(line) + ": a NUL byte");
    }
    if (text.size() + got.size() > max_bytes)
      throw std::runtime_error(path.string() + ": larger than " + std::to_string(max_bytes >> 20) +
                               " MiB");
    text.append(got);
  }
  if (in.bad()) throw std::runtime_error(path.string() + ": cannot read it");
  return text;
}

}  // namespace podsim

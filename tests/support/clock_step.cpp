// A wall clock stepped at run time for the test's servers: see clock_step.hpp.
#include "support/clock_step.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace pathlock::test {
namespace {

constexpr const char* kFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
constexpr const char* kGlibcMalloc = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0";

void require_file(const char* path) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error(std::string("SteppedClock: ") + path +
                             " is missing (Debian packages libfaketime and libc6)");
}

}  // namespace

SteppedClock::SteppedClock() {
  require_file(kFaketime);
  require_file(kGlibcMalloc);
  std::string tmpl = (std::filesystem::temp_directory_path() / "pathlock-clock-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("SteppedClock: mkdtemp failed");
  dir_ = tmpl;
  ::chmod(dir_.c_str(), 0755);  // PostgreSQL runs as nobody when the test is root
  file_ = dir_ + "/offset";
  set_offset(std::chrono::seconds{0});
}

SteppedClock::~SteppedClock() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::vector<std::string> SteppedClock::postgres_environment() const {
  return {std::string("LD_PRELOAD=") + kFaketime, "FAKETIME_TIMESTAMP_FILE=" + file_, "FAKETIME_NO_CACHE=1",
          "FAKETIME_DONT_FAKE_MONOTONIC=1", "NO_FAKE_STAT=1"};
}

std::vector<std::string> SteppedClock::redis_environment() const {
  std::vector<std::string> env = postgres_environment();
  env[0] = std::string("LD_PRELOAD=") + kGlibcMalloc + ":" + kFaketime;  // see the header: jemalloc
  return env;
}

void SteppedClock::set_offset(std::chrono::seconds offset) {
  const std::string tmp = file_ + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << (offset.count() >= 0 ? "+" : "") << offset.count() << "\n";
    if (!out.flush()) throw std::runtime_error("SteppedClock: cannot write " + tmp);
  }
  ::chmod(tmp.c_str(), 0644);
  if (std::rename(tmp.c_str(), file_.c_str()) != 0) throw std::runtime_error("SteppedClock: cannot replace " + file_);
  offset_ = offset;
}

std::int64_t SteppedClock::real_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace pathlock::test

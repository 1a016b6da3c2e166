// pathlock-bench helpers; see util.hpp.
#include "util.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace pathlock::bench {

// ---- interruption -----------------------------------------------------
namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void on_signal(int) {
  g_interrupted.store(true);
}
}  // namespace

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}
bool interrupted() {
  return g_interrupted.load(std::memory_order_relaxed);
}
void check_interrupted() {
  if (interrupted()) throw Interrupted();
}

// ---- statistics -------------------------------------------------------
double Latencies::percentile_us(double p) {
  if (v_.empty()) return std::nan("");
  if (!sorted_) {
    std::sort(v_.begin(), v_.end());
    sorted_ = true;
  }
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v_.size()));
  const std::size_t i = std::min(v_.size() - 1, static_cast<std::size_t>(std::max(1.0, rank)) - 1);
  return static_cast<double>(v_[i]) / 1000.0;
}

// ---- CSV ----------------------------------------------------------------
CsvWriter::CsvWriter(const std::string& path) : path_(path) {
  flush();
}

void CsvWriter::row(const std::vector<std::string>& cells) {
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i) text_ += ',';
    const std::string& c = cells[i];
    if (c.find_first_of(",\"\n") == std::string::npos) {
      text_ += c;
    } else {
      text_ += '"';
      for (char ch : c) text_ += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      text_ += '"';
    }
  }
  text_ += '\n';
  flush();  // rewritten on every row, so an interrupted run keeps what it measured
}

void CsvWriter::flush() {
  std::ofstream out(path_, std::ios::trunc);
  out << text_;
  if (!out) throw std::runtime_error("cannot write " + path_);
}

// ---- Redis --------------------------------------------------------------
RedisReply command_ok(RedisConnection& c, const std::vector<std::string>& argv) {
  RedisReply r = c.command(argv);
  if (r.is_error()) throw std::runtime_error(argv.at(0) + ": " + r.str);
  return r;
}

std::string info_field(RedisConnection& c, const std::string& section, const std::string& name) {
  const std::string text = command_ok(c, {"INFO", section}).str;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 && line[name.size()] == ':')
      return line.substr(name.size() + 1);
  }
  return {};
}

long long used_memory(RedisConnection& c) {
  const std::string v = info_field(c, "memory", "used_memory");
  return v.empty() ? 0 : std::stoll(v);
}

double used_cpu_seconds(RedisConnection& c) {
  const std::string text = command_ok(c, {"INFO", "cpu"}).str;
  auto field = [&](const std::string& name) {
    const auto at = text.find("\n" + name + ":");
    return at == std::string::npos ? 0.0 : std::stod(text.substr(at + name.size() + 2));
  };
  return field("used_cpu_user") + field("used_cpu_sys");
}

std::string load_script(RedisConnection& c, const std::string& source) {
  return command_ok(c, {"SCRIPT", "LOAD", source}).str;
}

// ---- machine ------------------------------------------------------------
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

unsigned cpu_count() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1U;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return in ? a + " " + b + " " + c : "unknown";
}

std::string shell_join(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (i) out += ' ';
    if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") ==
                          std::string::npos) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

std::string run_command(const std::string& cmd) {
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f)) out += buf;
    ::pclose(f);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace pathlock::bench

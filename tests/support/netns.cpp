// Network namespaces, veth pairs and nftables drops; see netns.hpp.
#include "support/netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "redis_devtools/redis_server.hpp"  // run_program

namespace pathlock::test {
namespace {

const std::string kPrefix = "pathlock-netns-";

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// The pid in a name pathlock-netns-<pid>-..., or 0.
long pid_of(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return 0;
  return std::strtol(name.c_str() + kPrefix.size(), nullptr, 10);
}

}  // namespace

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string run_checked(const std::vector<std::string>& argv) {
  std::string output;
  const int status = devtools::run_program(argv, output, 20000);
  if (status != 0)
    throw std::runtime_error("`" + joined(argv) + "` exited with status " + std::to_string(status) + ": " + output);
  return output;
}

void remove_stale_namespaces() {
  std::istringstream list(run_checked({"ip", "netns", "list"}));
  for (std::string line; std::getline(list, line);) {
    const std::string name = line.substr(0, line.find(' '));  // "NAME (id: N)"
    const long pid = pid_of(name);
    if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::string ignored;  // another test process may be removing it too
    devtools::run_program({"ip", "netns", "del", name}, ignored);
  }
}

NetworkNamespace::NetworkNamespace(const std::string& role) {
  static std::atomic<int> counter{0};
  remove_stale_namespaces();
  name_ = kPrefix + std::to_string(::getpid()) + "-" + std::to_string(++counter) + "-" + role;
  run_checked({"ip", "netns", "add", name_});
  try {
    run_checked({"ip", "-n", name_, "link", "set", "lo", "up"});
  } catch (...) {
    std::string ignored;
    devtools::run_program({"ip", "netns", "del", name_}, ignored);
    throw;
  }
}

NetworkNamespace::~NetworkNamespace() {
  std::string output;
  if (devtools::run_program({"ip", "netns", "del", name_}, output) != 0)
    std::cerr << "warning: ip netns del " << name_ << ": " << output << "\n";
}

std::string NetworkNamespace::run(const std::vector<std::string>& argv) const {
  std::vector<std::string> full{"ip", "netns", "exec", name_};
  full.insert(full.end(), argv.begin(), argv.end());
  return run_checked(full);
}

InNamespace::InNamespace(const NetworkNamespace& ns) {
  saved_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (saved_ < 0) throw std::runtime_error(std::string("open /proc/thread-self/ns/net: ") + std::strerror(errno));
  const std::string path = "/run/netns/" + ns.name();
  const int target = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const int entered = target < 0 ? -1 : ::setns(target, CLONE_NEWNET);
  const int error = errno;
  if (target >= 0) ::close(target);
  if (entered != 0) {
    ::close(saved_);
    throw std::runtime_error("cannot enter network namespace " + path + ": " + std::strerror(error));
  }
}

InNamespace::~InNamespace() {
  if (::setns(saved_, CLONE_NEWNET) != 0) {
    std::cerr << "cannot return to the thread's network namespace: " << std::strerror(errno) << "\n";
    std::abort();  // the thread would go on in the wrong network
  }
  ::close(saved_);
}

VethLink::VethLink(const NetworkNamespace& a, const NetworkNamespace& b, int subnet)
    : a_(a),
      b_(b),
      subnet_(subnet),
      device_a_("pl" + std::to_string(subnet) + "a"),
      device_b_("pl" + std::to_string(subnet) + "b") {
  if (subnet < 1 || subnet > 254) throw std::invalid_argument("VethLink: subnet 1..254");
  run_checked({"ip", "link", "add", device_a_, "netns", a.name(), "type", "veth", "peer", "name", device_b_, "netns",
               b.name()});
  try {
    run_checked({"ip", "-n", a.name(), "addr", "add", address_a() + "/30", "dev", device_a_});
    run_checked({"ip", "-n", b.name(), "addr", "add", address_b() + "/30", "dev", device_b_});
    run_checked({"ip", "-n", a.name(), "link", "set", device_a_, "up"});
    run_checked({"ip", "-n", b.name(), "link", "set", device_b_, "up"});
  } catch (...) {
    std::string ignored;
    devtools::run_program({"ip", "-n", a.name(), "link", "del", device_a_}, ignored);
    throw;
  }
}

VethLink::~VethLink() {
  std::string ignored;  // gone already when a namespace went first
  devtools::run_program({"ip", "-n", a_.name(), "link", "del", device_a_}, ignored);
}

std::string VethLink::address_a() const {
  return "169.254." + std::to_string(subnet_) + ".1";
}
std::string VethLink::address_b() const {
  return "169.254." + std::to_string(subnet_) + ".2";
}

void VethLink::drop_at(const NetworkNamespace& ns, const std::string& device, bool& dropping) {
  if (dropping) return;
  const std::string table = "pathlock_cut_" + device;
  ns.run({"nft", "add table inet " + table + "; add chain inet " + table +
                     " input { type filter hook input priority 0; policy accept; }; add rule inet " + table +
                     " input iifname \"" + device + "\" drop"});
  dropping = true;
}

void VethLink::cut() {
  drop_at(a_, device_a_, dropping_a_);
  drop_at(b_, device_b_, dropping_b_);
}

void VethLink::drop_arriving_at_a() {
  drop_at(a_, device_a_, dropping_a_);
}

void VethLink::heal() {
  if (dropping_a_) a_.run({"nft", "delete", "table", "inet", "pathlock_cut_" + device_a_});
  dropping_a_ = false;
  if (dropping_b_) b_.run({"nft", "delete", "table", "inet", "pathlock_cut_" + device_b_});
  dropping_b_ = false;
}

void VethLink::set_down() {
  run_checked({"ip", "-n", a_.name(), "link", "set", device_a_, "down"});
}

void VethLink::set_up() {
  run_checked({"ip", "-n", a_.name(), "link", "set", device_a_, "up"});
}

Switch::Switch(int subnet) : subnet_(subnet) {
  ns_.run({"ip", "link", "add", "br0", "type", "bridge"});
  ns_.run({"ip", "link", "set", "br0", "up"});
}

Switch::~Switch() = default;

std::string Switch::attach(const NetworkNamespace& ns, int host) {
  const std::string address = "169.254." + std::to_string(subnet_) + "." + std::to_string(host);
  const std::string port = "p" + std::to_string(host);
  run_checked(
      {"ip", "link", "add", "sw0", "netns", ns.name(), "type", "veth", "peer", "name", port, "netns", ns_.name()});
  run_checked({"ip", "-n", ns_.name(), "link", "set", port, "master", "br0"});
  run_checked({"ip", "-n", ns_.name(), "link", "set", port, "up"});
  run_checked({"ip", "-n", ns.name(), "addr", "add", address + "/24", "dev", "sw0"});
  run_checked({"ip", "-n", ns.name(), "link", "set", "sw0", "up"});
  return address;
}

Drop::Drop(const NetworkNamespace& ns, const std::vector<std::string>& sources) : ns_(ns) {
  static std::atomic<int> counter{0};
  table_ = "pathlock_drop_" + std::to_string(++counter);
  std::string set;
  for (const std::string& s : sources) set += (set.empty() ? "" : ", ") + s;
  ns.run({"nft", "add table inet " + table_ + "; add chain inet " + table_ +
                     " input { type filter hook input priority 0; policy accept; }; add rule inet " + table_ +
                     " input ip saddr { " + set + " } drop"});
}

Drop::~Drop() {
  std::string output;
  if (devtools::run_program({"ip", "netns", "exec", ns_.name(), "nft", "delete", "table", "inet", table_}, output) != 0)
    std::cerr << "warning: cannot remove nft table " << table_ << " in " << ns_.name() << ": " << output << "\n";
}

}  // namespace pathlock::test

// Network partitions for tests: Linux network namespaces joined by veth
// pairs, cut and healed with nftables or by setting a link down (the kernel
// here has no netem).
//
// Layout: every namespace a test makes is named
//   pathlock-netns-<pid>-<n>-<role>
// (the test process's pid, a counter, the role given), so two test processes
// never share one, and one whose process is gone is recognised as stale and
// removed by the next test that makes one (remove_stale_namespaces()). A
// VethLink joins two of them with a pair of veth ends created directly
// inside them (never in the test's own namespace) and takes the link-local
// /30 169.254.<subnet>.0: end a is .1, end b is .2. Nothing routes anywhere
// else: no default route, no address outside 169.254/16 but each
// namespace's own loopback. Everything is undone by destructors (RAII),
// also when a REQUIRE throws: the link with its namespaces, the namespace
// with `ip netns del` (a namespace's veth ends and nft tables go with it).
//
// Entering: InNamespace moves the *calling thread* into a namespace until
// it is destroyed (setns(2) of the thread; a network namespace is per
// thread). A socket belongs to the namespace it was opened in for its whole
// life, and a thread or child process starts in the namespace of the thread
// that made it. So a server started inside InNamespace (RedisServer,
// PostgresServer: a forked child) listens there, and an engine made and
// called inside it opens its connections there, including those its own
// threads open later (the LeaseKeeper's, a waiting call's subscription).
//
// Cutting: VethLink::cut() adds, in each end's namespace, an nftables table
// whose input hook drops every packet that arrives over that end: a silent
// partition in both directions (senders see no error, TCP retransmits into
// the void, calls run into their timeouts), as a switch failing or a
// firewall change does. drop_arriving_at_a() drops one direction only
// (replies of a server on end b are lost while requests arrive). heal()
// removes the tables. set_down()/set_up() take end a's link down instead: the
// route goes, and senders on end a fail at once (ENETUNREACH).
//
// Every failure (no permission to make namespaces, `ip` or `nft` missing)
// throws std::runtime_error with the command and its output: the tests fail
// loudly, never skip.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pathlock::test {

// CLOCK_MONOTONIC in ns: the clock of pathlock-stress logs (one clock for
// every process of the machine; std::chrono::steady_clock on Linux).
std::int64_t monotonic_ns();

// Runs `argv` (argv[0] looked up in PATH) and returns its output; throws
// std::runtime_error with the command line and the output when it exits
// with another status than 0 or runs longer than 20 s.
std::string run_checked(const std::vector<std::string>& argv);

// Removes every namespace named pathlock-netns-<pid>-... whose process
// <pid> no longer exists (left by a test process that was killed).
void remove_stale_namespaces();

class NetworkNamespace {
 public:
  // Makes a fresh namespace with its loopback up; `role` names it in
  // `ip netns list` (letters and digits).
  explicit NetworkNamespace(const std::string& role);
  ~NetworkNamespace();  // ip netns del; never throws
  NetworkNamespace(const NetworkNamespace&) = delete;
  NetworkNamespace& operator=(const NetworkNamespace&) = delete;

  const std::string& name() const { return name_; }
  // Runs `argv` inside the namespace (ip netns exec); as run_checked.
  std::string run(const std::vector<std::string>& argv) const;

 private:
  std::string name_;
};

// The calling thread is in `ns` while this lives; see the file comment.
class InNamespace {
 public:
  explicit InNamespace(const NetworkNamespace& ns);
  ~InNamespace();  // back where the thread was; terminates if it cannot
  InNamespace(const InNamespace&) = delete;
  InNamespace& operator=(const InNamespace&) = delete;

 private:
  int saved_ = -1;
};

// Runs `body` with the calling thread in `ns` and returns what it returns.
template <class Body>
decltype(auto) inside(const NetworkNamespace& ns, Body&& body) {
  const InNamespace in(ns);
  return body();
}

class VethLink {
 public:
  // A veth pair between namespaces `a` and `b` (which must outlive it), up,
  // with 169.254.<subnet>.1/30 on a's end and .2 on b's; subnet 1..254.
  VethLink(const NetworkNamespace& a, const NetworkNamespace& b, int subnet);
  ~VethLink();  // deletes the pair; never throws
  VethLink(const VethLink&) = delete;
  VethLink& operator=(const VethLink&) = delete;

  std::string address_a() const;  // 169.254.<subnet>.1
  std::string address_b() const;  // 169.254.<subnet>.2

  void cut();                 // drop everything arriving at either end
  void drop_arriving_at_a();  // drop only what b sends to a
  void heal();                // remove the drops (idempotent)
  void set_down();            // end a's link down: no route at a
  void set_up();              // and up again, with its address and route

 private:
  void drop_at(const NetworkNamespace& ns, const std::string& device, bool& dropping);
  const NetworkNamespace& a_;
  const NetworkNamespace& b_;
  int subnet_;
  std::string device_a_, device_b_;
  bool dropping_a_ = false, dropping_b_ = false;
};

// A switch for more than two namespaces: a bridge in a namespace of its own;
// each namespace attached gets a veth end with 169.254.<subnet>.<host>/24
// (the other end a port of the bridge). Partitions between groups of
// attached namespaces are made with Drop.
class Switch {
 public:
  explicit Switch(int subnet);
  ~Switch();  // its namespace (and so the bridge and the ports) goes
  Switch(const Switch&) = delete;
  Switch& operator=(const Switch&) = delete;

  // Attaches `ns` (which must outlive the switch) as host `host` (1..254);
  // returns its address.
  std::string attach(const NetworkNamespace& ns, int host);

 private:
  NetworkNamespace ns_{"switch"};
  int subnet_;
};

// While alive, namespace `ns` drops every packet arriving from one of
// `sources` (IPv4 addresses): one side of a partition, silent, as
// VethLink::cut(). Destroying it heals (never throws).
class Drop {
 public:
  Drop(const NetworkNamespace& ns, const std::vector<std::string>& sources);
  ~Drop();
  Drop(const Drop&) = delete;
  Drop& operator=(const Drop&) = delete;

 private:
  const NetworkNamespace& ns_;
  std::string table_;
};

}  // namespace pathlock::test

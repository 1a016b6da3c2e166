// pathlock-pg-bench's multi-client mode (clients.cpp).
#pragma once

#include <string>
#include <vector>

namespace pathlock::bench {

struct ClientsArgs {
  std::vector<int> clients;                       // --clients 1,4,16,32
  int namespaces = 1;                             // --namespaces N (disjoint mode)
  double seconds = 5;                             // --seconds S per point
  std::vector<std::string> modes{"disjoint", "hot"};  // --mode disjoint|hot|both
  std::vector<std::string> pg_settings;           // --pg-setting, --async-commit
  bool no_redis = false;                          // --no-redis
  std::vector<std::string> sql_files;             // --sql FILE: loaded over the engine's functions
  long long abandoned = 0;                        // --abandoned N: a postgres-sweep line per point
  int rounds = 1;                                 // --rounds R: the points R times over, slices pooled
};

// Runs the table; returns the exit status.
int run_clients(const ClientsArgs& args);

}  // namespace pathlock::bench

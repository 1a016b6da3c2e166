// What the PostgreSQL and PgBouncer child processes of the tests have in
// common (postgres_server.hpp, pgbouncer.hpp): both refuse to run as root, so
// started by root they run as the unprivileged user `nobody` (setuid in the
// child) in a temporary directory given to that user. Not part of the library.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace pathlock::devtools {

// A fresh directory /tmp/pathlock-TAG-XXXXXX, owned by the server's user.
std::string make_server_dir(const std::string& tag);

// fork + (as root) setgid/setuid to nobody + exec of argv[0] (a path);
// stdout/stderr appended to `log`, stdin /dev/null. `own_group`: in a
// process group of its own. A child started from the main thread dies with
// its parent (PR_SET_PDEATHSIG). Its environment is this process's plus
// `environment` ("NAME=value" each: environment_with, redis_server.hpp).
pid_t spawn_as_server_user(const std::vector<std::string>& argv, const std::string& log, bool own_group,
                           const std::vector<std::string>& environment = {});

// Runs a program to its end as the server's user; throws
// std::runtime_error with its output (`log`) when it fails.
void run_as_server_user(const std::vector<std::string>& argv, const std::string& log);

// Sends `sig` to `pid` (a group leader) and waits up to 10 s for it to
// exit, then kills its group (SIGKILL) and reaps it.
void stop_server_process(pid_t pid, int sig);


// The whole text of `file` ("" when it cannot be read).
std::string read_whole_file(const std::string& file);

// The whole text of `file`; throws std::runtime_error when it cannot be read
// (a file the user named, such as a tool's --sql FILE).
std::string read_named_file(const std::string& file);

}  // namespace pathlock::devtools

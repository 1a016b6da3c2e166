// core::random_hex: ids and tokens from the kernel's CSPRNG, drawn in
// batches per thread, never repeated, never shared with a forked child.
#include "core/request.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <set>

using namespace pathlock;

TEST_CASE("random ids are hex of the asked length and do not repeat across batches", "[core][random]") {
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {  // many 512-byte batches
    const std::string id = core::random_hex(i % 2 ? 12 : 16);
    CHECK(id.size() == (i % 2 ? 24u : 32u));
    CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(seen.insert(id).second);
  }
  CHECK(core::random_hex(700).size() == 1400);  // longer than one batch
}

TEST_CASE("a forked child never hands out the parent's next token", "[core][random]") {
  core::random_hex(16);  // the parent has a batch in hand
  int pipe_fd[2];
  REQUIRE(::pipe(pipe_fd) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const std::string token = core::random_hex(16);
    const ssize_t written = ::write(pipe_fd[1], token.data(), token.size());
    ::_exit(written == static_cast<ssize_t>(token.size()) ? 0 : 1);
  }
  ::close(pipe_fd[1]);
  char buf[32];
  std::size_t got = 0;
  for (ssize_t n; got < sizeof buf && (n = ::read(pipe_fd[0], buf + got, sizeof buf - got)) > 0;)
    got += static_cast<std::size_t>(n);
  ::close(pipe_fd[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(got == sizeof buf);
  CHECK(std::string(buf, sizeof buf) != core::random_hex(16));
}

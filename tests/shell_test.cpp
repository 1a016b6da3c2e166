// `pathlock shell` as a real process: one JSON object per line, flushed.
#include "shell.hpp"

#include "support/backends.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#ifdef PATHLOCK_TEST_WITH_POSTGRES
#include "support/postgres_server.hpp"
#endif

#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER
#include "cmake/pathlock_child_process.hpp"

#include <httplib.h>
#endif

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <pathlock/version.hpp>

#include <fstream>
#include <map>
#include <set>

using json = nlohmann::json;

namespace {

// A child process running `pathlock shell ARGS`, spoken to through pipes.
class ShellProcess {
 public:
  explicit ShellProcess(std::vector<std::string> args) {
    int in[2], out[2];
    REQUIRE(pipe(in) == 0);
    REQUIRE(pipe(out) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      std::vector<char*> argv{const_cast<char*>(PATHLOCK_CLI), const_cast<char*>("shell")};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(PATHLOCK_CLI, argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~ShellProcess() {
    if (to_ >= 0) close(to_);
    close(from_);
    int status = 0;
    if (pid_ > 0) waitpid(pid_, &status, 0);
  }
  void send(const std::string& line) {
    const std::string data = line + "\n";
    REQUIRE(write(to_, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
  }
  // Reads one line, waiting at most 5 s; "" on timeout or end of output.
  std::string line() {
    while (true) {
      const auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string l = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return l;
      }
      pollfd p{from_, POLLIN, 0};
      if (poll(&p, 1, 5000) <= 0) return "";
      char chunk[4096];
      const ssize_t n = read(from_, chunk, sizeof chunk);
      if (n <= 0) return "";
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  json ask(const std::string& command) {
    send(command);
    const std::string l = line();
    INFO("command: " << command << "\nanswer: " << l);
    REQUIRE_FALSE(l.empty());
    return json::parse(l);
  }
  void kill(int sig) { ::kill(pid_, sig); }
  // Waits for the shell to end; its wait status.
  int wait_status() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  // Closes stdin and returns everything the shell printed after that.
  std::string finish() {
    close(to_);
    to_ = -1;
    std::string rest, l;
    while (!(l = line()).empty()) rest += l + "\n";
    return rest;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_;
};

}  // namespace

TEST_CASE("shell answers each line as it arrives", "[shell]") {
  ShellProcess sh({"--backend", "memory", "--namespace", "shell-test"});
  const json held = sh.ask("acquire carol upload /p/A/C/D");
  REQUIRE(held["granted"] == true);
  CHECK(held["fence"] == 1);
  CHECK(held["holds"] == 1);
  CHECK_FALSE(held["id"].get<std::string>().empty());
  const json refused = sh.ask("acquire alice move_folder /p/A/C /p/B ttl=5000");
  CHECK(refused["granted"] == false);
  CHECK(refused["conflict"]["id"] == held["id"]);
  CHECK(refused["conflict"]["op"] == "upload");
  CHECK(refused["conflict"]["role"] == "target");
  CHECK(refused["conflict"]["path"] == "/p/A/C/D");
  CHECK(refused["conflict"]["owner"] == "carol");
  CHECK(refused["conflict"]["expires_in_ms"].get<long long>() > 0);
  const json locks = sh.ask("locks /p/A");
  REQUIRE(locks["locks"].size() == 1);
  CHECK(locks["locks"][0]["targets"]["target"] == "/p/A/C/D");
  const std::string id = held["id"], token = held["token"];
  CHECK(sh.ask("renew " + id + " " + token + " ttl=60000")["renewed"] == true);
  CHECK(sh.ask("renew " + id + " wrong")["renewed"] == false);
  CHECK(sh.ask("release " + id + " wrong")["released"] == false);
  CHECK(sh.ask("release " + id + " " + token)["released"] == true);
  CHECK(sh.ask("locks")["locks"].empty());
  CHECK(sh.ask("acquire alice move_folder /p/A/C /p/B")["granted"] == true);
  CHECK(sh.finish().empty());
}

TEST_CASE("shell: blank and comment lines produce nothing - errors carry on", "[shell]") {
  ShellProcess sh({});
  sh.send("");
  sh.send("   ");
  sh.send("# a comment with a \"quote");
  sh.send("  # indented comment");
  CHECK(sh.ask("frobnicate")["error"].get<std::string>().find("unknown command 'frobnicate'") != std::string::npos);
  CHECK(sh.ask("acquire a explode /p")["error"] == "unknown operation 'explode'");
  CHECK(sh.ask("acquire a move_folder /p/A")["error"] == "operation 'move_folder' takes 2 path(s), got 1");
  CHECK(sh.ask("acquire a upload /p ttl=abc")["error"] == "'ttl=abc' needs a whole number of milliseconds");
  CHECK(sh.ask("acquire a upload /p ttl=0")["error"].get<std::string>().find("ttl 0 ms is outside") == 0);
  CHECK(sh.ask("acquire a upload relative")["error"].get<std::string>().find("not absolute") != std::string::npos);
  CHECK(sh.ask("acquire a upload \"/p/unterminated")["error"] == "unterminated quote");
  CHECK(sh.ask("release onlyone")["error"] == "usage: release ID TOKEN");
  CHECK(sh.ask("acquire a upload /p/A")["granted"] == true);
  CHECK(sh.finish().empty());
}

TEST_CASE("shell: quoting, unicode and metacharacters", "[shell]") {
  ShellProcess sh({"--namespace", "names"});
  const json spaced = sh.ask(R"(acquire "bob smith" delete_folder "/p/My Documents/a \"b\" \\c")");
  REQUIRE(spaced["granted"] == true);
  const json listed = sh.ask(R"(locks "/p/My Documents")");
  REQUIRE(listed["locks"].size() == 1);
  CHECK(listed["locks"][0]["targets"]["target"] == "/p/My Documents/a \"b\" \\c");
  CHECK(listed["locks"][0]["owner"] == "bob smith");
  const json meta = sh.ask("acquire a delete_folder /p/-.%()[]*+?^$");
  REQUIRE(meta["granted"] == true);
  CHECK(sh.ask("acquire b upload /p/-.%()[]*+?^$/x")["granted"] == false);
  CHECK(sh.ask("acquire b upload /p/-.%()[]*+?^")["granted"] == true);
  CHECK(sh.ask("acquire b upload /p/x-.%()[]*+?^$")["granted"] == true);
  const json uni = sh.ask("acquire 李雷 delete_folder /项目/文件夹");
  REQUIRE(uni["granted"] == true);
  const json blocked = sh.ask("acquire 韩梅梅 upload /项目/文件夹/子");
  CHECK(blocked["granted"] == false);
  CHECK(blocked["conflict"]["owner"] == "李雷");
  CHECK(blocked["conflict"]["path"] == "/项目/文件夹");
  CHECK(sh.ask("acquire 韩梅梅 upload /项目/文件")["granted"] == true);
  // A quoted word is never an option: "ttl=5" is a (relative, so bad) path.
  CHECK(sh.ask("acquire x upload \"ttl=5\"")["error"] == "target path: path 'ttl=5' is not absolute (must start with '/')");
  const json bad_utf8 = sh.ask("acquire x upload /p/\xff");
  CHECK(bad_utf8["error"].get<std::string>().find("invalid UTF-8") != std::string::npos);
}

TEST_CASE("shell: an unknown backend or option is refused at start", "[shell]") {
  CHECK(std::system(PATHLOCK_CLI " shell --backend nosuch < /dev/null 2> /dev/null") != 0);
  CHECK(std::system(PATHLOCK_CLI " shell --colour red < /dev/null 2> /dev/null") != 0);
}

namespace {

struct CliRun {
  int status = -1;  // exit status, or 128 + signal
  std::string out, err;
};

// Runs `pathlock ARGS` (ARGS already shell-quoted) with `input` on stdin.
CliRun run_cli(const std::string& args, const std::string& input) {
  char dir_template[] = "/tmp/pathlock-cli-XXXXXX";
  REQUIRE(mkdtemp(dir_template));
  const std::string dir = dir_template;
  {
    FILE* in = std::fopen((dir + "/in").c_str(), "w");
    REQUIRE(in);
    std::fputs(input.c_str(), in);
    std::fclose(in);
  }
  const std::string command =
      std::string(PATHLOCK_CLI) + " " + args + " < " + dir + "/in > " + dir + "/out 2> " + dir + "/err";
  const int raw = std::system(command.c_str());
  auto slurp = [](const std::string& path) {
    std::string text;
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      char buf[4096];
      for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
      std::fclose(f);
    }
    return text;
  };
  CliRun r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = slurp(dir + "/out");
  r.err = slurp(dir + "/err");
  std::system(("rm -rf " + dir).c_str());
  return r;
}

}  // namespace

TEST_CASE("shell: an invalid namespace ends it before it reads a line", "[shell]") {
  const std::string input = "acquire a upload /p\nlocks\n";
  for (const std::string& ns : std::vector<std::string>{"'bad ns'", "''", "'a/b'", "'ns{x}'", std::string(129, 'n')}) {
    INFO("--namespace " << ns);
    const CliRun r = run_cli("shell --namespace " + ns, input);
    CHECK(r.status == 1);
    CHECK(r.out.empty());  // nothing was answered
    CHECK(r.err.find("error: namespace") == 0);
  }
  // The same checks pass a good namespace (the limit is 128 bytes).
  const CliRun ok = run_cli("shell --namespace " + std::string(128, 'n'), "locks\n");
  CHECK(ok.status == 0);
  CHECK(ok.out == "{\"locks\":[]}\n");
}

TEST_CASE("cli: an option given twice is an error", "[shell]") {
  // (Every program's option table: tests/options_test.cpp.)
  for (const std::string& args : std::vector<std::string>{"shell --namespace a --namespace b",
                                                          "shell --backend memory --backend memory",
                                                          "demo --backend memory --backend memory"}) {
    INFO(args);
    const CliRun r = run_cli(args, "locks\n");
    CHECK(r.status == 2);  // the command line is refused (docs/cli.md, "Exit status")
    CHECK(r.out.empty());
    CHECK(r.err.find("is given more than once") != std::string::npos);
  }
}

namespace {

// `pathlock shell` on `backend` ("memory", or "redis" or "postgres" on the
// test server) in a namespace of its own.
std::vector<std::string> shell_args(const std::string& backend, const std::string& hint) {
  std::vector<std::string> args{"--backend", backend, "--namespace", pathlock::test::unique_namespace(hint)};
  if (backend == "redis") {
    args.push_back("--redis");
    args.push_back(pathlock::test::shared_redis_server().url());
  }
#ifdef PATHLOCK_TEST_WITH_POSTGRES
  if (backend == "postgres") {
    args.push_back("--postgres");
    args.push_back(pathlock::test::shared_postgres_url());
  }
#endif
  return args;
}

// The backends the shell is tested on.
std::vector<std::string> shell_backends() {
#ifdef PATHLOCK_TEST_WITH_POSTGRES
  return {"memory", "redis", "postgres"};
#else
  return {"memory", "redis"};
#endif
}

}  // namespace

namespace {

// A shell on one backend with the locks it took: id -> token, ids in order.
struct PagingShell {
  explicit PagingShell(std::vector<std::string> args) : sh(std::move(args)) {}
  ShellProcess sh;
  std::map<std::string, std::string> token_of;
  std::vector<std::string> ids;

  std::string take(const std::string& owner, const std::string& path) {
    const json g = sh.ask("acquire " + owner + " upload " + path);
    REQUIRE(g["granted"] == true);
    token_of[g["id"]] = g["token"];
    ids.push_back(g["id"]);
    return g["id"].get<std::string>();
  }
};

// Pages of 4 under `prefix` give the whole list, each lock exactly once, in
// fence order.
void pages_match_the_whole(ShellProcess& sh, const std::string& prefix) {
  INFO("prefix " << prefix);
  std::vector<std::string> whole;
  const json listed = sh.ask("locks " + prefix);
  for (const json& l : listed["locks"]) whole.push_back(l["id"]);
  std::vector<std::string> paged;
  std::string after;
  for (int pages = 0; pages < 100; ++pages) {
    const json page = sh.ask(fmt::format("locks {} limit=4{}", prefix, after.empty() ? "" : " after=" + after));
    REQUIRE(page.contains("next"));
    CHECK(page["locks"].size() <= 4);
    for (const json& l : page["locks"]) paged.push_back(l["id"]);
    if (page["next"].is_null()) break;
    after = page["next"].get<std::string>();
    REQUIRE_FALSE(after.empty());
  }
  CHECK(paged == whole);
}

// Locks come and go between pages: every lock live throughout (of the
// first `first` taken) still appears exactly once, and none appears twice.
void pages_survive_churn(PagingShell& s, std::size_t first) {
  std::vector<std::string> seen;
  std::set<std::string> gone;
  std::string after;
  int pages = 0;
  for (; pages < 100; ++pages) {
    const json page = s.sh.ask("locks limit=3" + (after.empty() ? std::string() : " after=" + after));
    for (const json& l : page["locks"]) seen.push_back(l["id"]);
    if (pages == 1) {  // release one lock already listed and one not yet listed, take two new ones
      for (const std::string& id : {seen.front(), s.ids.back()}) {
        CHECK(s.sh.ask("release " + id + " " + s.token_of[id])["released"] == true);
        gone.insert(id);
      }
      s.take("late1", "/q/late1");
      s.take("late2", "/p/A/late2");
    }
    if (page["next"].is_null()) break;
    after = page["next"].get<std::string>();
  }
  CHECK(pages < 100);
  std::map<std::string, int> times;
  for (const std::string& id : seen) ++times[id];
  for (const auto& [id, n] : times) {
    INFO("lock " << id);
    CHECK(n == 1);
    CHECK(s.token_of.count(id) == 1);
  }
  for (std::size_t i = 0; i < first; ++i) {
    if (gone.count(s.ids[i])) continue;
    INFO("lock " << s.ids[i] << " was live throughout");
    CHECK(times[s.ids[i]] == 1);
  }
}

}  // namespace

TEST_CASE("shell: locks with limit= pages through every live lock exactly once", "[shell][redis]") {
  for (const std::string& backend : shell_backends()) {
    DYNAMIC_SECTION(backend) {
      PagingShell s(shell_args(backend, "pages"));
      CHECK(s.sh.ask("locks limit=5") == json::parse(R"({"locks":[],"next":null})"));
      for (int i = 0; i < 23; ++i) s.take(fmt::format("u{}", i), fmt::format("/p/{}/f{}", i % 3 == 0 ? "B" : "A", i));

      // Without limit= the answer is the whole list, with no "next".
      const json everything = s.sh.ask("locks");
      REQUIRE(everything["locks"].size() == 23);
      CHECK_FALSE(everything.contains("next"));

      for (const std::string prefix : {"/", "/p/A"}) pages_match_the_whole(s.sh, prefix);
      pages_survive_churn(s, 23);
    }
  }
}

TEST_CASE("shell: bad limit= and after= values are clear errors", "[shell][redis]") {
  for (const std::string& backend : shell_backends()) {
    DYNAMIC_SECTION(backend) {
      ShellProcess sh(shell_args(backend, "badpages"));
      REQUIRE(sh.ask("acquire a upload /p/A")["granted"] == true);
      const std::string range = "needs a whole number from 1 to 10000";
      for (const std::string bad : {"limit=0", "limit=-1", "limit=abc", "limit=", "limit=10001", "limit=5x",
                                    "limit=99999999999999999999999"}) {
        INFO(bad);
        CHECK(sh.ask("locks " + bad)["error"] == "'" + bad + "' " + range);
      }
      CHECK(sh.ask("locks limit=1 limit=2")["error"] == "limit= is given twice");
      CHECK(sh.ask("locks limit=1 after=1 after=2")["error"] == "after= is given twice");
      CHECK(sh.ask("locks limit=1 after=")["error"] == "after= needs a cursor: the \"next\" of the previous page");
      CHECK(sh.ask("locks after=1")["error"] == "after= needs limit=");
      CHECK(sh.ask("locks /p /q")["error"] == "usage: locks [PREFIX] [limit=N] [after=CURSOR]");
      for (const std::string cursor : {"abc", "-1", "1.5", "0x10", "99999999999999999999999"}) {
        INFO("after=" << cursor);
        const json answer = sh.ask("locks limit=2 after=" + cursor);
        REQUIRE(answer.contains("error"));
        CHECK(answer["error"].get<std::string>().find("cursor") != std::string::npos);
      }
      // A quoted word is a prefix, never an option.
      CHECK(sh.ask("locks \"limit=2\"")["error"].get<std::string>().find("not absolute") != std::string::npos);
      // The shell carries on.
      CHECK(sh.ask("locks limit=10000")["locks"].size() == 1);
    }
  }
}

TEST_CASE("shell: one owner's plain repeated acquire conflicts, a proof re-enters, a key retries", "[shell]") {
  ShellProcess sh({"--namespace", "shell-identity"});
  const json first = sh.ask("acquire alice move_folder /p/A /p/B");
  REQUIRE(first["granted"] == true);
  const std::string id = first["id"], token = first["token"];
  const json again = sh.ask("acquire alice move_folder /p/A /p/B");
  CHECK(again["granted"] == false);
  CHECK(again["conflict"]["id"] == id);
  CHECK_FALSE(again["conflict"].contains("token"));
  const json reentered = sh.ask("acquire alice move_folder /p/A /p/B reenter=" + id + " token=" + token);
  CHECK(reentered["granted"] == true);
  CHECK(reentered["id"] == id);
  CHECK(reentered["holds"] == 2);
  const json wrong = sh.ask("acquire mallory move_folder /p/A /p/B reenter=" + id + " token=guess");
  CHECK(wrong == json{{"granted", false}, {"not_holder", true}});
  CHECK(sh.ask("acquire alice move_folder /p/A /p/B reenter=" + id)["error"] == "reenter=ID and token=TOKEN come together");
  CHECK(sh.ask("acquire a upload /q key=k1 key=k2")["error"] == "key= is given twice");
  CHECK(sh.ask("acquire a upload /q ttl=5 ttl=5")["error"] == "ttl= is given twice");  // even with one value
  CHECK(sh.ask("acquire a upload /q wait=0 wait=1")["error"] == "wait= is given twice");
  CHECK(sh.ask("acquire a upload /q fair=true fair=true")["error"] == "fair= is given twice");
  CHECK(sh.ask("held " + id + " " + token)["held"] == true);
  CHECK(sh.ask("held " + id + " guess")["held"] == false);
  const json keyed = sh.ask("acquire bob upload /q/x key=retry-1");
  REQUIRE(keyed["granted"] == true);
  const json retried = sh.ask("acquire bob upload /q/x key=retry-1");
  CHECK(retried["id"] == keyed["id"]);
  CHECK(retried["holds"] == 1);
  CHECK(sh.ask("acquire bob upload /q/y key=retry-1")["error"].get<std::string>().find("idempotency_key") !=
        std::string::npos);
  CHECK(sh.finish().empty());
}

TEST_CASE("shell: convert changes a held lock's operation, or names what refuses it", "[shell][convert]") {
  ShellProcess sh({"--namespace", "shell-convert"});
  const json copy = sh.ask("acquire alice copy_folder /p/A /q/A");
  REQUIRE(copy["granted"] == true);
  const std::string id = copy["id"], token = copy["token"];
  const json upload = sh.ask("acquire bob upload /p/A/x");
  REQUIRE(upload["granted"] == true);
  const json refused = sh.ask("convert " + id + " " + token + " move_folder /p/A /q/A");
  CHECK(refused["granted"] == false);
  CHECK(refused["conflict"]["id"] == upload["id"]);
  CHECK(sh.ask("locks /p/A")["locks"][0]["op"] == "copy_folder");  // as it was
  // The conversion's dry run names the upload only; an acquire's, the copy too.
  const json dry = sh.ask("blockers move_folder /p/A /q/A converts=" + id);
  REQUIRE(dry["blockers"].size() == 1);
  CHECK(dry["blockers"][0]["id"] == upload["id"]);
  const json plain = sh.ask("blockers move_folder /p/A /q/A");
  CHECK(std::any_of(plain["blockers"].begin(), plain["blockers"].end(), [&](const json& b) { return b["id"] == id; }));
  CHECK(sh.ask("blockers move_folder /p/A /q/A converts=" + id + " converts=" + id)["error"] ==
        "converts= takes a lock id, once");
  CHECK(sh.ask("convert " + id + " guess move_folder /p/A /q/A") == json{{"granted", false}, {"not_holder", true}});
  CHECK(sh.ask("convert " + id + " " + token + " move_folder /p/A")["error"] == "operation 'move_folder' takes 2 path(s), got 1");
  CHECK(sh.ask("convert " + id + " " + token + " move_folder /p/A /q/A wait=1 wait=1")["error"] == "wait= is given twice");
  REQUIRE(sh.ask("release " + upload["id"].get<std::string>() + " " + upload["token"].get<std::string>())["released"] ==
          true);
  const json moved = sh.ask("convert " + id + " " + token + " move_folder /p/A /q/A ttl=9000 key=move-1");
  REQUIRE(moved["granted"] == true);
  CHECK(moved["id"] == id);
  CHECK(moved["token"] == token);
  CHECK(moved["fence"].get<std::uint64_t>() > copy["fence"].get<std::uint64_t>());
  CHECK(moved["expires_in_ms"].get<long long>() <= 9000);
  CHECK(sh.ask("convert " + id + " " + token + " move_folder /p/A /q/A ttl=9000 key=move-1")["fence"] == moved["fence"]);
  CHECK(sh.ask("locks /p/A")["locks"][0]["op"] == "move_folder");
  CHECK(sh.finish().empty());
}

TEST_CASE("shell: a line with a carriage return is answered with an error, never skipped", "[shell]") {
  ShellProcess sh({});
  for (const std::string& line : {std::string("\r"), std::string("acquire a upload /p\r"), std::string("  \r  ")}) {
    const json answer = sh.ask(line);
    CHECK(answer["error"].get<std::string>().find("carriage return") != std::string::npos);
  }
  CHECK(sh.ask("locks")["locks"].empty());  // nothing was taken
  CHECK(sh.finish().empty());
}

TEST_CASE("cli: --version prints the release", "[shell]") {
  FILE* pipe = popen(PATHLOCK_CLI " --version", "r");
  REQUIRE(pipe);
  char buf[256] = {};
  const std::size_t n = fread(buf, 1, sizeof buf - 1, pipe);
  CHECK(pclose(pipe) == 0);
  CHECK(std::string(buf, n) == "pathlock " PATHLOCK_VERSION_STRING "\n");
  std::ifstream version_file(PATHLOCK_SOURCE_DIR "/VERSION");
  std::string version;
  std::getline(version_file, version);
  CHECK(version == PATHLOCK_VERSION_STRING);  // the one place the version is written
}

TEST_CASE("split_words follows the quoting rule", "[shell]") {
  std::vector<bool> quoted;
  std::string error;
  const auto w = pathlock::cli::split_words(R"(a  "b c" "d\"e" "f\\g" "")", quoted, error);
  REQUIRE(w);
  CHECK(*w == std::vector<std::string>{"a", "b c", "d\"e", "f\\g", ""});
  CHECK(quoted == std::vector<bool>{false, true, true, true, true});
  CHECK_FALSE(pathlock::cli::split_words(R"("a\n")", quoted, error));
  CHECK(error == "in a quoted word, a backslash must be followed by \" or \\");
  CHECK_FALSE(pathlock::cli::split_words(R"("a"b)", quoted, error));
}

TEST_CASE("the demo tells the article's story", "[demo]") {
  FILE* pipe = popen(PATHLOCK_CLI " demo", "r");
  REQUIRE(pipe);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  CHECK(pclose(pipe) == 0);
  auto has = [&](const std::string& needle) {
    INFO(needle);
    CHECK(out.find(needle) != std::string::npos);
  };
  has("alice  move_folder /p/A/C -> /p/Archive       REFUSED  dave's create holds target /p/A/C/D");
  has("erin   upload /p/A/C/D                        REFUSED  alice's move_folder holds src /p/A/C");
  has("frank  rename_file /p/A/a.txt                 GRANTED");
  has("gina   upload /p/B                            GRANTED");
  has("ivan   create /p/A/CD                         GRANTED");
  has("kim    delete_folder /p/B                     GRANTED");
  has("kim    release                                released");
}

TEST_CASE("shell over TLS: the --tls-* options, and a clear error without them", "[shell][redis][tls]") {
  const pathlock::test::RedisServer& server = pathlock::test::shared_tls_redis_server();
  const std::string ca = pathlock::test::shared_tls_certificates().crt("ca");
  const std::string base = "shell --backend redis --redis " + server.tls_url() + " --namespace " +
                           pathlock::test::unique_namespace("tls-shell");
  const CliRun ok = run_cli(base + " --tls-ca-file " + ca + " --tls-min-version 1.2", "locks\n");
  CHECK(ok.status == 0);
  CHECK(ok.out == "{\"locks\":[]}\n");
  const CliRun untrusted = run_cli(base, "locks\n");  // the system trust store does not know the test CA
  CHECK(untrusted.status == 1);
  CHECK(untrusted.out.empty());
  CHECK(untrusted.err.find("verify failed") != std::string::npos);
  const CliRun bad = run_cli(base + " --tls-insecure-skip-verify maybe", "locks\n");
  CHECK(bad.status == 2);  // a word not among the option's: a bad command line (docs/cli.md)
  CHECK(bad.err.find("--tls-insecure-skip-verify: takes yes or no") != std::string::npos);
}

#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER
TEST_CASE("shell --metrics-listen serves what the shell process did", "[shell][metrics]") {
  std::string backend = GENERATE(as<std::string>{}, "memory", "redis");
  std::vector<std::string> args{"--namespace", "shell-metrics-" + std::to_string(getpid())};
  if (backend == "redis") args.insert(args.end(), {"--backend", "redis", "--redis", pathlock::test::shared_redis_server().url()});
  // A port that was free a moment ago (another process may take it: retried).
  for (int attempt = 1;; ++attempt) {
    const int port = pathlock::child_process::free_loopback_port();
    REQUIRE(port > 0);
    std::vector<std::string> with = args;
    with.insert(with.end(), {"--metrics-listen", "127.0.0.1:" + std::to_string(port)});
    ShellProcess sh(with);
    sh.send("acquire ann upload /m/A/f");
    const std::string first = sh.line();
    if (first.empty() && attempt < 3) continue;  // it exited: the port was taken
    INFO("backend " << backend << ", first answer: " << first);
    REQUIRE(json::parse(first)["granted"] == true);
    CHECK(sh.ask("acquire bob delete_folder /m/A")["granted"] == false);
    httplib::Client client("127.0.0.1", port);
    const auto res = client.Get("/metrics");
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->body.find("pathlock_acquires_total{op=\"upload\",outcome=\"granted\"} 1\n") != std::string::npos);
    CHECK(res->body.find("pathlock_refusals_total{op=\"delete_folder\",held_op=\"upload\",relation=\"held_descendant\"} 1\n") !=
          std::string::npos);
    if (backend == "redis") CHECK(res->body.find("pathlock_redis_call_seconds_count 0\n") == std::string::npos);
    CHECK(sh.finish().empty());
    break;
  }
}

TEST_CASE("shell --metrics-listen: a bad address ends the shell with status 1", "[shell][metrics]") {
  for (const char* bad : {"nonsense", "127.0.0.1:99999", "127.0.0.1:"}) {
    const int null = open("/dev/null", O_RDWR);
    REQUIRE(null >= 0);
    const pid_t pid = pathlock::test::spawn({PATHLOCK_CLI, "shell", "--metrics-listen", bad}, null, null);
    close(null);
    CHECK(pathlock::test::wait_exit(pid) == 1);
  }
}
#endif

TEST_CASE("shell: cancel stops the waiting acquire, and lines sent meanwhile keep their order", "[shell][redis]") {
  const std::string url = pathlock::test::shared_redis_server().url();
  const std::string ns = "shell-cancel-" + std::to_string(getpid());
  auto engine = pathlock::make_redis_engine({.url = url});
  ShellProcess holder({"--backend", "redis", "--redis", url, "--namespace", ns});
  ShellProcess waiter({"--backend", "redis", "--redis", url, "--namespace", ns});
  const json held = holder.ask("acquire alice delete_folder /p/A");
  REQUIRE(held["granted"] == true);
  CHECK(waiter.ask("cancel") == json{{"cancelled", false}});  // nothing waits
  waiter.send("acquire bob upload /p/A/x wait=60000");
  // The sync point: bob is in line (seen on the server), not a sleep.
  for (int i = 0; i < 2000 && engine->waiters(ns).empty(); ++i) usleep(5000);
  REQUIRE(engine->waiters(ns).size() == 1);
  waiter.send("locks");  // read during the wait, answered after it
  waiter.send("cancel");
  CHECK(json::parse(waiter.line()) == json{{"granted", false}, {"cancelled", true}});
  CHECK(json::parse(waiter.line())["locks"].size() == 1);  // alice's only
  CHECK(json::parse(waiter.line()) == json{{"cancelled", true}});
  CHECK(waiter.ask("cancel") == json{{"cancelled", false}});  // once only
  CHECK(engine->waiters(ns).empty());
  CHECK(holder.ask("release " + held["id"].get<std::string>() + " " + held["token"].get<std::string>())["released"] ==
        true);
  CHECK(engine->list(ns).empty());  // bob holds nothing
  // End of input does not cancel: the wait runs out and is answered.
  const json again = holder.ask("acquire alice delete_folder /p/A");
  REQUIRE(again["granted"] == true);
  waiter.send("acquire bob upload /p/A/x wait=300");
  const std::string rest = waiter.finish();
  CHECK(rest.find("\"granted\":false") != std::string::npos);
  CHECK(rest.find("cancelled") == std::string::npos);
}

TEST_CASE("shell: Ctrl-C during a wait stops it, answers it, and ends the shell by the signal", "[shell][redis]") {
  const std::string url = pathlock::test::shared_redis_server().url();
  const std::string ns = "shell-sigint-" + std::to_string(getpid());
  auto engine = pathlock::make_redis_engine({.url = url});
  const auto held = engine->acquire({ns, "alice", "delete_folder", {{"target", "/p/A"}}});
  REQUIRE(held.granted());
  ShellProcess waiter({"--backend", "redis", "--redis", url, "--namespace", ns});
  waiter.send("acquire bob upload /p/A/x wait=60000");
  for (int i = 0; i < 2000 && engine->waiters(ns).empty(); ++i) usleep(5000);
  REQUIRE(engine->waiters(ns).size() == 1);
  waiter.kill(SIGINT);
  CHECK(json::parse(waiter.line()) == json{{"granted", false}, {"cancelled", true}});
  const int status = waiter.wait_status();
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK(engine->waiters(ns).empty());
  CHECK(engine->release(ns, held.grant.id, held.grant.token));
  CHECK(engine->list(ns).empty());
}

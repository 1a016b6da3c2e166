// One contract, readable by machines (issue 41, point 1): the library's
// contract function answers one JSON document (src/redis/contract.hpp), and
// docs/lua-protocol.md#contract-read-only shows that document for the
// shipped matrix. These tests fail when the page and the library disagree,
// and when the contract's functions are not what the library registers.
#include "support/redis_server.hpp"

#include "redis/library.hpp"
#include "refined_matrix.hpp"

#include <pathlock/matrix_table.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace pathlock;
using namespace pathlock::test;

namespace {

// The library's answer to FCALL_RO <prefix>contract 0, parsed.
nlohmann::json library_contract(const RedisServer& server, const redis::Library& lib) {
  const RedisReply loaded = server.command({"FUNCTION", "LOAD", lib.code});
  INFO(loaded.str);
  CHECK((!loaded.is_error() || loaded.str.find("already exists") != std::string::npos));
  const RedisReply r = server.command({"FCALL_RO", lib.function_prefix + "contract", "0"});
  REQUIRE(r.elements.size() == 2);
  CHECK(r.elements[0].str == "contract");
  CHECK(r.elements[1].type == RedisReply::Type::string);
  return nlohmann::json::parse(r.elements[1].str);
}

// The JSON block of docs/lua-protocol.md between <!-- contract --> and
// <!-- /contract -->, parsed.
nlohmann::json documented_contract() {
  std::ifstream in(std::string(PATHLOCK_SOURCE_DIR) + "/docs/lua-protocol.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::size_t open = doc.find("<!-- contract -->");
  const std::size_t close = doc.find("<!-- /contract -->");
  REQUIRE(open != std::string::npos);
  REQUIRE(close != std::string::npos);
  const std::size_t from = doc.find("```json\n", open);
  const std::size_t to = doc.rfind("```", close);
  REQUIRE(from < to);
  return nlohmann::json::parse(doc.substr(from + 8, to - from - 8));
}

}  // namespace

TEST_CASE("the contract of the shipped library is the document docs/lua-protocol.md shows", "[redis][contract]") {
  const nlohmann::json answered = library_contract(shared_redis_server(), redis::library_for(default_matrix()));
  const nlohmann::json documented = documented_contract();
  for (const auto& [key, value] : documented.items()) {
    INFO("contract field " << key << ": the library answers " << answered.value(key, nlohmann::json()).dump());
    CHECK(answered.value(key, nlohmann::json()) == value);
  }
  CHECK(answered == documented);
}

TEST_CASE("the contract names every function the library registers, with its flags and keys", "[redis][contract]") {
  const RedisServer& server = shared_redis_server();
  const redis::Library lib = redis::library_for(default_matrix());
  const nlohmann::json contract = library_contract(server, lib);
  std::map<std::string, std::set<std::string>> registered;
  const RedisReply listed = server.command({"FUNCTION", "LIST", "LIBRARYNAME", lib.name});
  REQUIRE(listed.elements.size() == 1);
  const std::vector<RedisReply>& library = listed.elements[0].elements;
  for (std::size_t i = 0; i + 1 < library.size(); i += 2) {
    if (library[i].str != "functions") continue;
    for (const RedisReply& f : library[i + 1].elements) {
      std::string name;
      std::set<std::string> flags;
      for (std::size_t k = 0; k + 1 < f.elements.size(); k += 2) {
        if (f.elements[k].str == "name") name = f.elements[k + 1].str.substr(lib.function_prefix.size());
        if (f.elements[k].str == "flags")
          for (const RedisReply& flag : f.elements[k + 1].elements) flags.insert(flag.str);
      }
      registered[name] = flags;
    }
  }
  std::map<std::string, std::set<std::string>> named;
  for (const nlohmann::json& f : contract["functions"]) named[f["name"]] = f["flags"].get<std::set<std::string>>();
  CHECK(named == registered);
  // A function without keys answers with none; every other takes the nine.
  for (const nlohmann::json& f : contract["functions"]) {
    INFO(f["name"]);
    CHECK((f["keys"] == 0 || f["keys"] == contract["keys"]["suffixes"].size()));
    if (f["keys"] == 0) {
      const RedisReply r = server.command({"FCALL_RO", lib.function_prefix + f["name"].get<std::string>(), "0"});
      CHECK(r.elements.at(0).str == f["replies"][0]);
    }
  }
  CHECK(contract["layout"] == redis::kLayoutVersion);
}

TEST_CASE("a contract follows its matrix: operations and roles of another matrix", "[redis][contract]") {
  const RedisServer& server = shared_redis_server();
  const MatrixTable& m = test_matrices::refined::kMatrix;
  REQUIRE(m.fingerprint != default_matrix().fingerprint);
  const nlohmann::json contract = library_contract(server, redis::library_for(m));
  REQUIRE(contract["operations"].size() == m.op_count);
  for (std::size_t o = 0; o < m.op_count; ++o) {
    CHECK(contract["operations"][o]["name"] == std::string(m.ops[o].name));
    CHECK(contract["operations"][o]["roles"].size() == m.ops[o].role_count);
  }
  CHECK(contract["matrix"]["fingerprint"] == std::string(m.fingerprint));
  CHECK(server.command({"FCALL_RO", redis::library_for(m).function_prefix + "contract", "1", "k"})
            .elements.at(0)
            .str == "invalid");
}

// Path model: normalisation, refusals, component-wise overlap.
#include <pathlock/path.hpp>

#include <catch2/catch.hpp>

using namespace pathlock;

TEST_CASE("paths normalise repeated and trailing slashes", "[path]") {
  CHECK(normalize_path("/") == "/");
  CHECK(normalize_path("//") == "/");
  CHECK(normalize_path("/p/A/") == "/p/A");
  CHECK(normalize_path("/p//A///C") == "/p/A/C");
  CHECK(normalize_path("/p/A C/ d ") == "/p/A C/ d ");
  CHECK(normalize_path("/p/-.%()[]*+?^$") == "/p/-.%()[]*+?^$");
  CHECK(normalize_path("/p/{x}/a.b") == "/p/{x}/a.b");
  CHECK(normalize_path("/项目/文件夹/ファイル.txt") == "/项目/文件夹/ファイル.txt");
  CHECK(normalize_path("/p/...") == "/p/...");  // only exactly "." and ".." are special
  CHECK(normalize_path("/p/.hidden") == "/p/.hidden");
}

TEST_CASE("paths that would spell another path are refused", "[path]") {
  CHECK_THROWS_AS(normalize_path(""), PathError);
  CHECK_THROWS_AS(normalize_path("p/A"), PathError);
  CHECK_THROWS_AS(normalize_path("/p/./A"), PathError);
  CHECK_THROWS_AS(normalize_path("/p/../A"), PathError);
  CHECK_THROWS_AS(normalize_path("/p/A/.."), PathError);
  CHECK_THROWS_AS(normalize_path(std::string("/p/\0A", 5)), PathError);
  CHECK_THROWS_AS(normalize_path("/p/\nA"), PathError);
  CHECK_THROWS_AS(normalize_path("/p/\x7f"), PathError);
  CHECK_THROWS_AS(normalize_path("/p/\xff"), PathError);          // never valid in UTF-8
  CHECK_THROWS_AS(normalize_path("/p/\xc0\xaf"), PathError);      // overlong '/'
  CHECK_THROWS_AS(normalize_path("/p/\xed\xa0\x80"), PathError);  // UTF-16 surrogate
  CHECK_THROWS_AS(normalize_path("/p/\xf4\x90\x80\x80"), PathError);  // above U+10FFFF
  CHECK_THROWS_AS(normalize_path("/p/\xe4\xb8"), PathError);      // truncated sequence
  CHECK_THROWS_AS(normalize_path("/" + std::string(256, 'x')), PathError);
  CHECK_THROWS_AS(normalize_path(std::string(kMaxPathBytes + 1, '/')), PathError);
  CHECK_NOTHROW(normalize_path("/" + std::string(255, 'x')));
}

TEST_CASE("refusals say what is wrong", "[path]") {
  CHECK_THROWS_WITH(normalize_path("p/A"), Catch::Contains("not absolute"));
  CHECK_THROWS_WITH(normalize_path("/p/../A"), Catch::Contains("'..'"));
  CHECK_THROWS_WITH(normalize_path("/p/\tA"), Catch::Contains("control character 0x09 at byte 3"));
  CHECK_THROWS_WITH(normalize_path("/ab\xff"), Catch::Contains("invalid UTF-8 at byte 3"));
}

TEST_CASE("overlap is by whole components", "[path]") {
  CHECK(paths_overlap("/p/A/C", "/p/A"));
  CHECK(paths_overlap("/p/A/C", "/p/A/C/x"));
  CHECK(paths_overlap("/p/A/C", "/p/A/C"));
  CHECK(paths_overlap("/", "/p"));
  CHECK_FALSE(paths_overlap("/p/A/C", "/p/A/CD"));
  CHECK_FALSE(paths_overlap("/p/A/C", "/p/X/A/C"));
  CHECK_FALSE(paths_overlap("/p/A/C", "/p/A/B"));
  CHECK(path_within("/p/A/C", "/p/A"));
  CHECK_FALSE(path_within("/p/A", "/p/A/C"));
  CHECK_FALSE(path_within("/p/AB", "/p/A"));
}

TEST_CASE("components of canonical paths", "[path]") {
  CHECK(path_components("/").empty());
  CHECK(path_components("/p/A C/x") == std::vector<std::string_view>{"p", "A C", "x"});
}

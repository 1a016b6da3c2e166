// The name policies' folding (src/names/fold.hpp) against the Unicode
// Character Database's own files (Debian's unicode-data: CaseFolding.txt,
// NormalizationTest.txt, DerivedAge.txt), and the names cloud drives meet.
#include "names/fold.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using pathlock::names::fold;
using pathlock::names::Policy;

namespace {

std::string utf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// "0041 0301" -> the code points; all_assigned is false when one of them is
// not assigned in Unicode 13.0 (such lines are for newer libraries).
std::vector<char32_t> code_points(const std::string& field) {
  std::vector<char32_t> cps;
  std::istringstream in(field);
  for (std::string hex; in >> hex;) cps.push_back(static_cast<char32_t>(std::stoul(hex, nullptr, 16)));
  return cps;
}
std::string text_of(const std::vector<char32_t>& cps) {
  std::string s;
  for (char32_t cp : cps) s += utf8(cp);
  return s;
}
bool all_assigned(const std::vector<char32_t>& cps) {
  for (char32_t cp : cps)
    if (!pathlock::names::assigned(cp)) return false;
  return true;
}

// The data lines of a UCD file, split at ';' (comments and blank lines out).
std::vector<std::vector<std::string>> ucd_lines(const std::string& path) {
  std::ifstream in(path);
  INFO(path);
  REQUIRE(in);
  std::vector<std::vector<std::string>> lines;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    if (line.empty() || line[0] == '@') continue;
    std::vector<std::string> fields;
    std::istringstream fs(line);
    for (std::string f; std::getline(fs, f, ';');) fields.push_back(f);
    lines.push_back(fields);
  }
  return lines;
}

std::string folded(Policy p, const std::string& s) {
  const auto f = fold(p, s);
  INFO(f.problem);
  REQUIRE(f.ok());
  return f.text;
}

}  // namespace

TEST_CASE("names: case folding follows CaseFolding.txt (C and F) for every code point assigned in Unicode 13.0",
          "[names]") {
  int checked = 0, skipped = 0;
  for (const auto& f : ucd_lines(PATHLOCK_UNICODE_DATA_DIR "/CaseFolding.txt")) {
    REQUIRE(f.size() >= 3);
    const std::string status = f[1].substr(f[1].find_first_not_of(' '));
    if (status != "C" && status != "F") continue;  // S: simple folding, T: Turkic; neither is the default
    const auto from = code_points(f[0]), to = code_points(f[2]);
    if (!all_assigned(from) || !all_assigned(to)) {
      ++skipped;
      continue;
    }
    INFO("CaseFolding.txt: " << f[0] << ";" << f[1] << ";" << f[2]);
    // The character meets its folding, and the folding is the folded form
    // (in NFC: the form every folded name is written in).
    CHECK(folded(Policy::nfc_casefold, text_of(from)) == folded(Policy::nfc, text_of(to)));
    CHECK(folded(Policy::nfc_casefold, text_of(to)) == folded(Policy::nfc, text_of(to)));
    ++checked;
  }
  CHECK(checked > 1400);
  std::cout << fmt::format("CaseFolding.txt: {} mappings checked, {} of code points after Unicode {}\n", checked,
                           skipped, pathlock::names::kUnicodeVersion);
}

TEST_CASE("names: NFC and canonical caseless folding follow NormalizationTest.txt", "[names]") {
  int checked = 0;
  for (const auto& f : ucd_lines(PATHLOCK_NORMALIZATION_TEST)) {
    REQUIRE(f.size() >= 5);
    std::vector<std::string> c;  // c1..c5 of the file's header
    bool usable = true;
    for (int i = 0; i < 5; ++i) {
      const auto cps = code_points(f[static_cast<std::size_t>(i)]);
      usable = usable && all_assigned(cps);
      c.push_back(text_of(cps));
    }
    if (!usable) continue;
    INFO("NormalizationTest.txt: " << f[0] << ";" << f[1] << ";" << f[2] << ";" << f[3] << ";" << f[4]);
    // NFC: c2 == toNFC(c1) == toNFC(c2) == toNFC(c3); c4 == toNFC(c4) == toNFC(c5).
    CHECK(folded(Policy::nfc, c[0]) == c[1]);
    CHECK(folded(Policy::nfc, c[1]) == c[1]);
    CHECK(folded(Policy::nfc, c[2]) == c[1]);
    CHECK(folded(Policy::nfc, c[3]) == c[3]);
    CHECK(folded(Policy::nfc, c[4]) == c[3]);
    // Canonically equivalent spellings meet under case folding too.
    const std::string c2 = folded(Policy::nfc_casefold, c[1]);
    CHECK(folded(Policy::nfc_casefold, c[0]) == c2);
    CHECK(folded(Policy::nfc_casefold, c[2]) == c2);
    CHECK(folded(Policy::nfc_casefold, c[4]) == folded(Policy::nfc_casefold, c[3]));
    ++checked;
  }
  CHECK(checked > 18000);
  std::cout << fmt::format("NormalizationTest.txt: {} lines checked\n", checked);
}

TEST_CASE("names: the spellings cloud drives meet, and those they keep apart", "[names]") {
  const auto same = [](Policy p, const std::string& a, const std::string& b) {
    INFO(a << " / " << b);
    CHECK(folded(p, a) == folded(p, b));
  };
  const auto apart = [](Policy p, const std::string& a, const std::string& b) {
    INFO(a << " / " << b);
    CHECK(folded(p, a) != folded(p, b));
  };
  const std::string cafe_nfc = "/p/Caf\xC3\xA9", cafe_nfd = "/p/Cafe\xCC\x81";
  apart(Policy::bytes, cafe_nfc, cafe_nfd);
  same(Policy::nfc, cafe_nfc, cafe_nfd);
  apart(Policy::nfc, "/p/Docs", "/p/docs");
  same(Policy::nfc_casefold, "/p/Docs/x", "/p/docs/X");
  same(Policy::nfc_casefold, "/p/CAF\xC3\x89", cafe_nfd);                          // É and e + U+0301
  same(Policy::nfc_casefold, "/Stra\xC3\x9F" "e", "/STRASSE");                     // ß: full folding
  same(Policy::nfc_casefold, "/\xEF\xAC\x81le", "/FILE");                          // ﬁ ligature
  same(Policy::nfc_casefold, "/\xE2\x84\xAA", "/k");                              // Kelvin sign
  same(Policy::nfc_casefold, "/\xCE\xA3\xCE\xB1\xCF\x82", "/\xCF\x83\xCE\xB1\xCF\x83");  // Σας, σασ: final sigma
  same(Policy::nfc_casefold, "/\xC4\xB0", "/i\xCC\x87");                          // İ: i + U+0307, not i
  apart(Policy::nfc_casefold, "/\xC4\xB0", "/i");
  apart(Policy::nfc_casefold, "/\xC4\xB1", "/i");                                  // ı stays dotless
  same(Policy::nfc, "/\xED\x95\x9C", "/\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB");    // 한, its jamo
  // A mark that folding turns into a starter (U+0345 -> U+03B9): the text is
  // put in canonical order before it is folded.
  same(Policy::nfc_casefold, "/\xCE\xB1\xCD\x85\xCC\x81", "/\xCE\xB1\xCC\x81\xCD\x85");
  CHECK(folded(Policy::nfc_casefold, "/\xCE\xB1\xCD\x85\xCC\x81") == "/\xCE\xAC\xCE\xB9");  // ά ι
  // Compatibility forms stay apart: fullwidth full stops are not '..'.
  apart(Policy::nfc_casefold, "/\xEF\xBC\x8E\xEF\xBC\x8E", "/..");
  CHECK(folded(Policy::nfc_casefold, "/p/Docs") == "/p/docs");  // written in NFC, never NFD
  CHECK(folded(Policy::nfc_casefold, cafe_nfd) == "/p/caf\xC3\xA9");
}

TEST_CASE("names: a name no client can fold is refused, naming why", "[names]") {
  for (const Policy p : {Policy::nfc, Policy::nfc_casefold}) {
    CHECK_THAT(fold(p, "/p/\xC3\x28").problem, Catch::Contains("is not valid UTF-8 (at byte 3)"));
    CHECK_THAT(fold(p, "/p/\xC0\xAF").problem, Catch::Contains("is not valid UTF-8"));      // overlong '/'
    CHECK_THAT(fold(p, "/p/\xED\xA0\x80").problem, Catch::Contains("is not valid UTF-8"));  // a surrogate
    // U+1FAE0 (Unicode 14.0) and U+0CDD (15.0): newer than the oldest library.
    CHECK(fold(p, "/p/" + utf8(0x1FAE0)).problem ==
          "holds U+1FAE0, which is not assigned in Unicode 13.0: not every client can fold it");
    CHECK_THAT(fold(p, "/" + utf8(0x0CDD)).problem, Catch::Contains("U+0CDD"));
    CHECK(fold(p, "/" + utf8(0xFDD0)).text == "/" + utf8(0xFDD0));  // a noncharacter: assigned, folds as itself
    CHECK(fold(p, "/p/" + utf8(0x1F600)).ok());                                   // 6.1: folds everywhere
  }
  CHECK(fold(Policy::bytes, "/p/\xC3\x28").text == "/p/\xC3\x28");  // bytes: as given, whatever they are
}

TEST_CASE("names: no code point folds into '/', '.' or a control character", "[names]") {
  int checked = 0;
  for (const auto& r : pathlock::names::assigned_ranges()) {
    for (char32_t cp = r.first; cp <= r.last; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      for (const Policy p : {Policy::nfc, Policy::nfc_casefold}) {
        const std::string in = utf8(cp), out = folded(p, in);
        const bool control = out.find_first_of(std::string("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0A\x0B\x0C"
                                                           "\x0D\x0E\x0F\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19"
                                                           "\x1A\x1B\x1C\x1D\x1E\x1F\x7F", 33)) != std::string::npos;
        if ((out.find('/') != std::string::npos) != (cp == '/') || (out.find('.') != std::string::npos) != (cp == '.') ||
            control != (cp < 0x20 || cp == 0x7F))
          FAIL(fmt::format("U+{:04X} folds to {:?}", static_cast<std::uint32_t>(cp), out));
      }
      ++checked;
    }
  }
  CHECK(checked > 280000);
}

TEST_CASE("names: the assigned code points are DerivedAge.txt's for Unicode 13.0", "[names]") {
  // Every line of DerivedAge.txt at an age up to 13.0 is inside the table,
  // and every code point of the table is in such a line.
  std::vector<pathlock::names::Range> lines;
  for (const auto& f : ucd_lines(PATHLOCK_UNICODE_DATA_DIR "/DerivedAge.txt")) {
    REQUIRE(f.size() == 2);
    const std::string age = f[1].substr(f[1].find_first_not_of(' '));
    const double major = std::stod(age);
    const auto dots = f[0].find("..");
    const auto first = static_cast<char32_t>(std::stoul(f[0], nullptr, 16));
    const auto last = dots == std::string::npos ? first : static_cast<char32_t>(std::stoul(f[0].substr(dots + 2), nullptr, 16));
    const bool old = major < 13.5;
    for (char32_t cp = first; cp <= last; ++cp) {
      if (pathlock::names::assigned(cp) != old)
        FAIL(fmt::format("U+{:04X} (age {}) is {}in the table", static_cast<std::uint32_t>(cp), age, old ? "not " : ""));
    }
    if (old) lines.push_back({first, last});
  }
  std::uint64_t in_lines = 0, in_table = 0;
  for (const auto& r : lines) in_lines += r.last - r.first + 1;
  for (const auto& r : pathlock::names::assigned_ranges()) in_table += r.last - r.first + 1;
  CHECK(in_table == in_lines);
}

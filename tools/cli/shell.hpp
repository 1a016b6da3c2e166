// The line protocol of `pathlock shell` (docs/cli.md): one command per input
// line, exactly one JSON object per output line, flushed after each.
#pragma once

#include <pathlock/engine.hpp>

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace pathlock::cli {

// Splits a command line into words. Words are separated by spaces or tabs;
// a word in double quotes may hold spaces, with \" and \\ as the only escapes.
// Returns nullopt and sets `error` for an unterminated quote or bad escape.
// `quoted[i]` tells whether word i was quoted (a quoted word is never an option).
std::optional<std::vector<std::string>> split_words(const std::string& line, std::vector<bool>& quoted,
                                                    std::string& error);

// Answers one line; returns the JSON text to print, or "" for a blank or
// comment line. Never throws for bad input: errors become {"error": ...}.
std::string answer_line(LockEngine& engine, const std::string& ns, const std::string& line);

// Reads lines from `in` until end of input, writing answers to `out`.
void run_shell(LockEngine& engine, const std::string& ns, std::istream& in, std::ostream& out);

}  // namespace pathlock::cli

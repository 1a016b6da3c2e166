// The Python binding's conversions between Python values and the engine's:
// seconds and milliseconds, str arguments (UTF-8 only), targets, quoted
// text for messages. Shared by the binding's source files (module.cpp,
// results.cpp, limits.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <pathlock/engine.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock::binding {

// Seconds (Python) to milliseconds (C++). NaN, infinities and values beyond
// the C++ range are bad input; the engine checks the allowed range itself.
Millis to_millis(double seconds, const char* field);
double to_seconds(Millis ms);
// A duration argument in seconds that must lie within lo..hi: the message
// speaks the API's unit (seconds), never the engine's milliseconds.
Millis seconds_within(double seconds, const char* field, Millis lo, Millis hi);
Millis ttl_arg(double seconds);
Millis wait_arg(double seconds);

// A str argument as UTF-8. A str that cannot be UTF-8 (a lone surrogate, as
// os.fsdecode makes of a byte that is not UTF-8) is bad input, not a
// UnicodeEncodeError from deep inside the binding.
std::string utf8_of(const pybind11::handle& h, const char* field);
// A role or path: str only (bytes are refused: decoding would guess an encoding).
std::string target_text(const pybind11::handle& h);
// {role: path} or a sequence of (role, path) pairs, in the order given.
std::vector<Target> to_targets(const pybind11::handle& targets);
// A namespace, owner or operation argument: str only, valid Unicode.
std::string text_arg(const pybind11::handle& h, const char* field);
// A limit argument: at least 1.
std::size_t to_limit(long long limit, const char* field);

// 'text' with ' and \ escaped and control characters as \xNN, so a repr
// or message shows an owner or path literally, whatever it holds.
std::string py_quoted(std::string_view text);
// A conflict in words: who holds what, where, and for how long.
std::string conflict_words(const Conflict& c);
// [(role, path), ...]
pybind11::list targets_list(const std::vector<Target>& targets);

}  // namespace pathlock::binding

// The binding's conversions (convert.hpp).
#include "convert.hpp"

#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <cmath>

namespace py = pybind11;

namespace pathlock::binding {

// Seconds (Python) to milliseconds (C++). NaN, infinities and values beyond
// the C++ range are bad input; the engine checks the allowed range itself.
Millis to_millis(double seconds, const char* field) {
  if (!std::isfinite(seconds) || std::fabs(seconds) > 1e12)
    throw InvalidRequest(std::string(field) + ": must be a finite number of seconds");
  return Millis{static_cast<Millis::rep>(std::llround(seconds * 1000.0))};
}

double to_seconds(Millis ms) { return static_cast<double>(ms.count()) / 1000.0; }

// A duration argument in seconds that must lie within lo..hi: the message
// speaks the API's unit (seconds), never the engine's milliseconds.
Millis seconds_within(double seconds, const char* field, Millis lo, Millis hi) {
  const Millis ms = to_millis(seconds, field);
  if (ms < lo || ms > hi)
    throw InvalidRequest(fmt::format("{}: {} s is outside {}..{} s", field, seconds, to_seconds(lo), to_seconds(hi)));
  return ms;
}
Millis ttl_arg(double seconds) { return seconds_within(seconds, "ttl", kMinTtl, kMaxTtl); }
Millis wait_arg(double seconds) { return seconds_within(seconds, "wait", Millis{0}, kMaxTtl); }

// A str argument as UTF-8. A str that cannot be UTF-8 (a lone surrogate, as
// os.fsdecode makes of a byte that is not UTF-8) is bad input, not a
// UnicodeEncodeError from deep inside the binding.
std::string utf8_of(const py::handle& h, const char* field) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(h.ptr(), &size);
  if (!data) {
    PyErr_Clear();
    throw InvalidRequest(std::string(field) + ": not valid Unicode (a lone surrogate?): " +
                         py::cast<std::string>(py::repr(h)));
  }
  return std::string(data, static_cast<std::size_t>(size));
}

// A role or path: str only. bytes are refused: b'/p/a' is not a path of any
// matrix, and decoding it would guess an encoding.
std::string target_text(const py::handle& h) {
  if (!py::isinstance<py::str>(h))
    throw InvalidRequest("targets: roles and paths must be str, got " +
                         py::cast<std::string>(py::str(h.get_type().attr("__name__"))) +
                         (py::isinstance<py::bytes>(h) ? " (decode it first, e.g. os.fsdecode)" : ""));
  return utf8_of(h, "targets");
}

// {role: path} or a sequence of (role, path) pairs, in the order given.
std::vector<Target> to_targets(const py::handle& targets) {
  std::vector<Target> out;
  if (py::isinstance<py::str>(targets) || py::isinstance<py::bytes>(targets))
    throw InvalidRequest("targets: expected {role: path} or a sequence of (role, path) pairs, got a string");
  if (py::isinstance<py::dict>(targets)) {
    for (auto item : py::reinterpret_borrow<py::dict>(targets))
      out.push_back(Target{target_text(item.first), target_text(item.second)});
    return out;
  }
  if (!py::isinstance<py::sequence>(targets))
    throw InvalidRequest("targets: expected {role: path} or a sequence of (role, path) pairs");
  for (auto item : py::reinterpret_borrow<py::sequence>(targets)) {
    if (!py::isinstance<py::sequence>(item) || py::isinstance<py::str>(item) || py::len(item) != 2)
      throw InvalidRequest("targets: each pair must be (role, path)");
    auto pair = py::reinterpret_borrow<py::sequence>(item);
    out.push_back(Target{target_text(pair[0]), target_text(pair[1])});
  }
  return out;
}

// A namespace, owner or operation argument: str only, valid Unicode.
std::string text_arg(const py::handle& h, const char* field) {
  if (!py::isinstance<py::str>(h))
    throw InvalidRequest(std::string(field) + ": must be str, got " +
                         py::cast<std::string>(py::str(h.get_type().attr("__name__"))));
  return utf8_of(h, field);
}

// 'text' with ' and \ escaped and control characters as \xNN, so a repr
// or message shows an owner or path literally, whatever it holds.
std::string py_quoted(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\'' || c == '\\') out += '\\';
    if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  return out + "'";
}

// A conflict in words: who holds what, where, and for how long.
std::string conflict_words(const Conflict& c) {
  return fmt::format("{} {} by {} on {} ({} {}), {:.3f} s left", c.queued ? "waiting" : "held", c.op, py_quoted(c.owner),
                     py_quoted(c.path), relation_name(c.relation), py_quoted(c.requested_path), to_seconds(c.expires_in));
}

py::list targets_list(const std::vector<Target>& targets) {
  py::list out;
  for (const Target& t : targets) out.append(py::make_tuple(t.role, t.path));
  return out;
}

std::size_t to_limit(long long limit, const char* field) {
  if (limit < 1) throw InvalidRequest(std::string(field) + ": must be at least 1");
  return static_cast<std::size_t>(limit);
}

}  // namespace pathlock::binding

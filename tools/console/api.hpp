// The console's JSON API plumbing, shared by its handlers
// (console_server.cpp, matrix_editor.cpp): every answer is JSON, bad input
// is 400 with {"error": MESSAGE}, anything else that fails is 500.
#pragma once

#include <pathlock/engine.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace pathlock::console {

using json = nlohmann::json;

// Every string goes out as JSON (escaped by the browser's JSON.parse and set
// with textContent by the pages); invalid UTF-8 is replaced, never refused.
inline std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// A bad request: answered 400 with its message.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void send_json(httplib::Response& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(dump(j), "application/json; charset=utf-8");
}

// Runs an API handler: its JSON, or 400/500 with {"error": MESSAGE}.
template <class F>
httplib::Server::Handler api(F f) {
  return [f](const httplib::Request& req, httplib::Response& res) {
    try {
      send_json(res, f(req));
    } catch (const BadInput& e) {
      send_json(res, {{"error", e.what()}}, 400);
    } catch (const InvalidRequest& e) {  // bad path, namespace, cursor...
      send_json(res, {{"error", e.what()}}, 400);
    } catch (const std::invalid_argument& e) {
      send_json(res, {{"error", e.what()}}, 400);
    } catch (const std::exception& e) {
      send_json(res, {{"error", e.what()}}, 500);
    }
  };
}

}  // namespace pathlock::console

#include "shell_keep.hpp"

#include <charconv>

namespace pathlock::cli {

using json = nlohmann::json;

KeptLocks::KeptLocks(LockEngine& engine, std::string ns) : engine_(engine), ns_(std::move(ns)), keeper_(engine) {}

KeptLocks::~KeptLocks() {
  for (auto& [id, lease] : leases_) keeper_.stop(*lease);
}

json KeptLocks::keep(const std::vector<std::string>& w, const std::vector<bool>& quoted) {
  const char* usage = "usage: keep ID TOKEN ttl=MS";
  if (w.size() != 4 || quoted[3] || w[3].rfind("ttl=", 0) != 0) throw InvalidRequest(usage);
  long long ms = 0;
  const char* begin = w[3].data() + 4;
  const char* end = w[3].data() + w[3].size();
  const auto [ptr, ec] = std::from_chars(begin, end, ms);
  if (ec != std::errc() || ptr != end || begin == end)
    throw InvalidRequest("'" + w[3] + "' needs a whole number of milliseconds");
  const Millis ttl{ms};
  if (!engine_.renew(ns_, w[1], w[2], ttl)) return json{{"keeping", false}};
  forget(w[1]);
  Grant grant;
  grant.id = w[1];
  grant.token = w[2];
  grant.expires_in = ttl;
  leases_[w[1]] = keeper_.keep(ns_, grant, ttl);
  return json{{"keeping", true}};
}

json KeptLocks::kept(const std::vector<std::string>& w) const {
  if (w.size() != 2) throw InvalidRequest("usage: kept ID");
  const auto it = leases_.find(w[1]);
  const bool lost = it != leases_.end() && it->second->lost();
  return json{{"keeping", it != leases_.end() && !lost}, {"lost", lost}};
}

json KeptLocks::unkeep(const std::vector<std::string>& w) {
  if (w.size() != 2) throw InvalidRequest("usage: unkeep ID");
  return json{{"unkept", forget(w[1])}};
}

bool KeptLocks::forget(const std::string& id) {
  const auto it = leases_.find(id);
  if (it == leases_.end()) return false;
  keeper_.stop(*it->second);
  leases_.erase(it);
  return true;
}

}  // namespace pathlock::cli

#include "shell_keep.hpp"

namespace pathlock::cli {

using json = nlohmann::json;

KeptLocks::KeptLocks(LockEngine& engine, std::string ns) : engine_(engine), ns_(std::move(ns)), keeper_(engine) {}

KeptLocks::~KeptLocks() {
  for (auto& [id, lease] : leases_) keeper_.stop(*lease);
}

json KeptLocks::keep(const std::string& id, const std::string& token, Millis ttl) {
  if (!engine_.renew(ns_, id, token, ttl)) return json{{"keeping", false}};
  forget(id);
  Grant grant;
  grant.id = id;
  grant.token = token;
  grant.expires_in = ttl;
  leases_[id] = keeper_.keep(ns_, grant, ttl);
  return json{{"keeping", true}};
}

json KeptLocks::kept(const std::string& id) const {
  const auto it = leases_.find(id);
  const bool lost = it != leases_.end() && it->second->lost();
  return json{{"keeping", it != leases_.end() && !lost}, {"lost", lost}};
}

json KeptLocks::unkeep(const std::string& id) { return json{{"unkept", forget(id)}}; }

bool KeptLocks::forget(const std::string& id) {
  const auto it = leases_.find(id);
  if (it == leases_.end()) return false;
  keeper_.stop(*it->second);
  leases_.erase(it);
  return true;
}

}  // namespace pathlock::cli

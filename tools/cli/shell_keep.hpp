// The shell's kept leases: `keep ID TOKEN ttl=MS`, `kept ID` and `unkeep ID`
// (docs/cli.md, the `keep` feature). A pathlock::LeaseKeeper renews each kept
// lock every third of its TTL until `unkeep`, a `release` of it, the end of
// the input, or the loss of its lease (a renewal that finds no lock, or the
// lease's end passing while renewals fail).
#pragma once

#include <pathlock/keeper.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>

namespace pathlock::cli {

class KeptLocks {
 public:
  // `engine` must outlive this object.
  explicit KeptLocks(LockEngine& engine, std::string ns);
  ~KeptLocks();
  KeptLocks(const KeptLocks&) = delete;
  KeptLocks& operator=(const KeptLocks&) = delete;

  // keep ID TOKEN ttl=MS: renews the lock now (as `renew ID TOKEN ttl=MS`)
  // and, when renewed, keeps it: {"keeping":true}, else {"keeping":false}.
  // A lock kept already is kept anew.
  nlohmann::json keep(const std::string& id, const std::string& token, Millis ttl);
  // kept ID: {"keeping":bool,"lost":bool}.
  nlohmann::json kept(const std::string& id) const;
  // unkeep ID: stops keeping it; {"unkept":true} when it was kept (or lost).
  nlohmann::json unkeep(const std::string& id);
  // Stops keeping lock `id` (before its release); true when it was kept.
  bool forget(const std::string& id);

 private:
  LockEngine& engine_;
  std::string ns_;
  LeaseKeeper keeper_;
  std::map<std::string, std::shared_ptr<Lease>> leases_;
};

}  // namespace pathlock::cli

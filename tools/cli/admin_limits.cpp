// `pathlock admin limits` (admin.hpp; docs/cli.md#pathlock-admin-limits):
// shows and sets the limits per namespace (docs/operations.md#limits-per-namespace)
// through an engine of the backend, so it sets exactly what every
// service's engine enforces. Showing reads only; --set and --clear write,
// and say so on stderr (the operator's log).
#include "admin.hpp"

#include "json_codec.hpp"

#include <pathlock/admin.hpp>

#include "common/options.hpp"

#include <fmt/format.h>

#include <ostream>

namespace pathlock::cli {

namespace {

// --locks N, --places N, --owner-locks N; each left out: no limit.
Limits limits_from(const options::Parsed& a) {
  Limits l;
  if (a.has("locks")) l.locks = static_cast<std::uint64_t>(a.number_or("locks", 0));
  if (a.has("places")) l.places = static_cast<std::uint64_t>(a.number_or("places", 0));
  if (a.has("owner-locks")) l.owner_locks = static_cast<std::uint64_t>(a.number_or("owner-locks", 0));
  return l;
}

}  // namespace

int admin_limits(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const auto max = static_cast<long long>(kMaxLimit);
  options::Options t = options::Options{}
                           .command("admin limits")
                           .value("namespace")
                           .flag("default")
                           .flag("set")
                           .flag("clear")
                           .number("locks", 0, max)
                           .number("places", 0, max)
                           .number("owner-locks", 0, max);
  const options::Parsed a = with_backend(t).parse({args.begin() + 1, args.end()});
  const bool of_default = a.has("default");
  if (of_default == a.has("namespace")) throw options::UsageError("give --namespace NS or --default");
  if (a.has("set") && a.has("clear")) throw options::UsageError("--set and --clear exclude each other");
  if (!a.has("set") && (a.has("locks") || a.has("places") || a.has("owner-locks")))
    throw options::UsageError("--locks, --places and --owner-locks go with --set");
  if (of_default && a.has("clear")) throw options::UsageError("the default is cleared with --set and no limit");
  const std::string ns = a.get("namespace");
  if (!of_default) admin::check_namespace(ns);  // exit 1 before connecting
  const std::unique_ptr<LockEngine> engine = make_engine(backend_from(a));
  if (a.has("set") || a.has("clear")) {
    const Limits l = limits_from(a);
    if (of_default) engine->set_default_limits(l);
    else engine->set_limits(ns, a.has("clear") ? std::nullopt : std::optional<Limits>(l));
    err << fmt::format("pathlock admin: limits of {}: {}\n", of_default ? "every namespace (the default)"
                                                                        : "namespace " + admin::log_escape(ns),
                       a.has("clear") ? "removed (the default applies)" : json_codec::limits(l).dump());
  }
  if (of_default) {
    // The default as a namespace that has none of its own sees it.
    out << json_codec::limits(engine->limits("pathlock-admin-default-probe").defaults).dump() << "\n";
    return 0;
  }
  out << json_codec::limits_status(ns, engine->limits(ns)).dump() << "\n";
  return 0;
}

}  // namespace pathlock::cli

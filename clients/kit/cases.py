"""Requests chosen from matrix-cases.json (docs/lua-protocol.md#test-vectors), so
the kit holds no operation names of its own: it works for the matrix the vectors
were written from."""
import functools

from conftest import load_vector


@functools.lru_cache(maxsize=None)
def all_cases():
    cases = load_vector("matrix-cases.json")["cases"]
    assert len(cases) >= 10, "matrix-cases.json holds almost no cases"
    return cases


def _single(targets):
    return len(targets) == 1


def same_path_cases():
    """Cases of one-target operations on one path: {(held_op, requested_op): granted}, and that path."""
    out, path = {}, None
    for c in all_cases():
        if c["relation"] != "same" or not (_single(c["held_targets"]) and _single(c["requested_targets"])):
            continue
        p = next(iter(c["held_targets"].values()))
        if p != next(iter(c["requested_targets"].values())):
            continue
        out[(c["held_op"], c["requested_op"])] = (c["granted"], c)
        path = path or p
    return out, path


def conflict():
    """One refused case (relation same, one target each): (held op, its targets, requested op, its targets)."""
    for c in all_cases():
        if not c["granted"] and c["relation"] == "same" and _single(c["held_targets"]):
            return c
    raise AssertionError("matrix-cases.json has no refused same-path case")


def compatible():
    """One granted case: two requests that may hold at once."""
    for c in all_cases():
        if c["granted"] and _single(c["held_targets"]) and _single(c["requested_targets"]):
            return c
    raise AssertionError("matrix-cases.json has no granted case")


def fairness_triple():
    """Ops (H, R, X) on one path P: H refuses R, H lets X in, R (waiting) refuses X. None if the matrix has none."""
    table, path = same_path_cases()
    ops = sorted({h for h, _ in table})
    for h in ops:
        for r in ops:
            if table.get((h, r), (True,))[0]:
                continue
            for x in ops:
                if table.get((h, x), (False,))[0] and table.get((r, x), (True,))[0] is False:
                    return h, r, x, path
    return None


def two_holders():
    """Ops (H1, H2, R) on one path: H1 and H2 may hold together and each refuses R. None if none."""
    table, path = same_path_cases()
    ops = sorted({h for h, _ in table})
    for h1 in ops:
        for h2 in ops:
            if h1 > h2 or not table.get((h1, h2), (False,))[0]:
                continue
            for r in ops:
                if table.get((h1, r), (True,))[0] is False and table.get((h2, r), (True,))[0] is False:
                    return h1, h2, r, path
    return None


def sample(granted, limit=6):
    """A few cases with this verdict, each with another held operation."""
    out, seen = [], set()
    for c in all_cases():
        if c["granted"] == granted and c["held_op"] not in seen:
            seen.add(c["held_op"])
            out.append(c)
        if len(out) == limit:
            break
    return out


def conversion_sample(limit=8):
    """A few of matrix-cases.json's conversion cases of kind "beside" (a lock converted beside a held one): one
    per (relation, outcome), each beside another held operation where it can, those whose converting lock stands
    on the path under test first."""
    beside = [c for c in load_vector("matrix-cases.json").get("conversion_cases", []) if c["kind"] == "beside"]
    beside.sort(key=lambda c: not any(p.startswith("/t/") for p in c["from_targets"].values()))
    out, seen, held = [], set(), set()
    for fresh in (True, False):  # another held operation each time, where the cases allow
        for c in beside:
            if (c["relation"], c["outcome"]) not in seen and not (fresh and c["held_op"] in held):
                seen.add((c["relation"], c["outcome"]))
                held.add(c["held_op"])
                out.append(c)
    return out[:limit]


def role_of(op):
    """The single role name of a one-target operation, from the cases."""
    for c in all_cases():
        if c["held_op"] == op and _single(c["held_targets"]):
            return next(iter(c["held_targets"]))
        if c["requested_op"] == op and _single(c["requested_targets"]):
            return next(iter(c["requested_targets"]))
    raise AssertionError(f"no one-target case of {op}")

-- The functions of the pathlock schema (docs/postgres.md#functions), run
-- after schema.sql (the tables, indexes and small helpers) and again by an
-- engine that finds an older pathlock.functions_version(): every statement
-- in it can be repeated. Each public call is one function, one statement,
-- one transaction. Calls whose paths overlap run one after the other
-- (pathlock.lock_paths: intention locks on the paths), the others at once
-- (docs/postgres.md#concurrency).
--
-- Plans (functions version 8). The calls that write (acquire, release,
-- renew, leave; watch and unwatch in schema.sql) run with enable_seqscan
-- and enable_bitmapscan off, set on the function like plan_cache_mode:
-- their statements read a handful of rows each through an index, and the
-- plan a session makes is kept for the session, made when it first calls,
-- often on tables that are empty or nearly so. On such tables the planner
-- found a sequential scan or a bitmap scan of a namespace's whole range
-- cheapest, and kept it while the tables filled with the dead rows of
-- released locks (autovacuum comes once a minute): the sweep's probe read
-- every page of `locks`, the conflict check every index entry of the
-- namespace in held_code and each of their heap rows (a bitmap scan never
-- marks an entry dead, so it read them again every call): 353 buffers a
-- call over the first 30 s of 16 clients, 61 % of an acquire's time. Off,
-- they are index scans, which also mark the entries of dead rows they meet
-- so that later scans skip them (docs/benchmarks.md#postgresql-under-many-clients).

-- Functions version 2 had these (now first_conflict and queued_conflict,
-- with fewer calls of PL/pgSQL functions: each costs about as much as a
-- small query).
DROP FUNCTION IF EXISTS pathlock.others_present(text, text);
DROP FUNCTION IF EXISTS pathlock.target_conflict(boolean, text, text, text, bigint, bigint, bigint, text[], bigint,
  bigint);
DROP FUNCTION IF EXISTS pathlock.held_conflict(text, text, text, bigint, bigint, bigint, text[]);
DROP FUNCTION IF EXISTS pathlock.waiter_conflict(text, text, text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS pathlock.other_matrices(text, text);
-- Version 3's acquire had no p_budget: dropped so that the version with it
-- (p_budget DEFAULT NULL) answers the calls of version 3 engines too.
DROP FUNCTION IF EXISTS pathlock.acquire(text, text, text, text, text[], int[], bigint[], text[], bigint, text, text,
  text, text, text, boolean, text, bigint);
-- Version 9's acquire replies three more columns (l_limit, l_max, l_count:
-- a refusal by a limit). CREATE OR REPLACE cannot change what a function
-- replies, so the acquire of versions 4 to 8, with the same arguments, is
-- dropped first, in this script's transaction: other sessions see the old
-- function until it commits, then the new one. Only when it lacks l_limit,
-- so that running the script again replaces version 9's in place.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_proc p
              WHERE p.oid = to_regprocedure('pathlock.acquire(text, text, text, text, text[], int[], bigint[], text[], '
                                            'bigint, text, text, text, text, text, boolean, text, bigint, bigint)')
                AND NOT 'l_limit' = ANY (p.proargnames)) THEN
    DROP FUNCTION pathlock.acquire(text, text, text, text, text[], int[], bigint[], text[], bigint, text, text, text,
                                   text, text, boolean, text, bigint, bigint);
  END IF;
END $$;

-- The sequences of fences and places (version 4; before, a row per
-- namespace held both, and its row lock made every grant of a namespace
-- wait for the previous one's commit). Created once, above every value the
-- namespaces' rows gave.
DO $$
BEGIN
  IF to_regclass('pathlock.fences') IS NULL THEN
    CREATE SEQUENCE pathlock.fences;
    PERFORM setval('pathlock.fences', greatest(1, pathlock.now_us(), (SELECT max(n.fence) FROM pathlock.namespaces n)));
  END IF;
  IF to_regclass('pathlock.places') IS NULL THEN
    CREATE SEQUENCE pathlock.places;
    PERFORM setval('pathlock.places', greatest(1, (SELECT max(n.place) FROM pathlock.namespaces n)));
  END IF;
END $$;

-- The advisory lock key of path sort key p_sk in namespace p_ns.
CREATE OR REPLACE FUNCTION pathlock.path_key(p_ns text, p_sk text) RETURNS bigint LANGUAGE sql IMMUTABLE AS
$$ SELECT hashtextextended('pathlock/' || p_ns || p_sk, 0) $$;

-- Takes what a call on paths p_paths of namespace p_ns must hold before it
-- looks, until its transaction ends: the lock of each requested path
-- exclusive, of each strict ancestor shared (an intention), each key once
-- (exclusive wins), in ascending key order. Two requests whose paths
-- overlap (one at or above a path of the other) meet on one key with at
-- least one exclusive hold, so the second waits until the first committed;
-- disjoint requests share only ancestors, shared, and do not wait. One
-- order for every caller: no deadlock (docs/postgres.md#concurrency).
CREATE OR REPLACE FUNCTION pathlock.lock_paths(p_ns text, p_paths text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM CASE WHEN x.ex THEN pg_advisory_xact_lock(x.k)::text ELSE pg_advisory_xact_lock_shared(x.k)::text END
     FROM (SELECT r.k, bool_or(r.ex) AS ex
             FROM (SELECT pathlock.path_key(p_ns, a) AS k, false AS ex
                     FROM unnest(p_paths) p, unnest(pathlock.above(p)) a
                   UNION ALL
                   SELECT pathlock.path_key(p_ns, pathlock.sk(p)), true FROM unnest(p_paths) p) r
            GROUP BY r.k ORDER BY r.k) x;
END $$;

-- The next fence: larger than every fence given before (in any namespace),
-- and at least the server clock in microseconds (never back, even after a
-- restore). Usually one nextval. When the clock has passed the sequence, the
-- sequence is moved one second ahead of the clock, in a short critical
-- section (a session advisory lock, released before the function returns
-- and on any error) so that moves never go back: that is about once a second
-- (a grant rate below a million a second), not once a grant, and no commit
-- waits inside it. Fences are unique and rise in the order they are given.
CREATE OR REPLACE FUNCTION pathlock.next_fence() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v bigint := nextval('pathlock.fences'); c bigint := pathlock.now_us();
  k bigint := hashtextextended('pathlock:fences', 0); got boolean := false;
BEGIN
  IF v >= c THEN RETURN v; END IF;
  BEGIN
    got := pg_advisory_lock(k)::text = '';
    v := nextval('pathlock.fences'); c := pathlock.now_us();
    IF v < c THEN v := setval('pathlock.fences', c + 1000000); END IF;
    got := NOT pg_advisory_unlock(k);
  EXCEPTION WHEN OTHERS OR query_canceled THEN
    IF got THEN PERFORM pg_advisory_unlock(k); END IF;
    RAISE;
  END;
  RETURN v;
END $$;

-- Gives namespace p_ns its row in pathlock.namespaces (the namespaces
-- known, for `admin status`) when it has none, with fence p_fence (0 when
-- NULL). Version 7: the row's fence is no longer moved by later grants.
CREATE OR REPLACE FUNCTION pathlock.touch(p_ns text, p_fence bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pathlock.namespaces n WHERE n.ns = p_ns) THEN
    INSERT INTO pathlock.namespaces (ns, fence) VALUES (p_ns, coalesce(p_fence, 0)) ON CONFLICT DO NOTHING;
  END IF;
END $$;

-- The oldest place in line (older than p_place when set) that refuses one
-- of a request's targets as if it held its lock, target by target: x_index
-- is the target (1-based), x_rel the relation (0 same, 1 above, 2 below).
CREATE OR REPLACE FUNCTION pathlock.queued_conflict(p_ns text, p_fp text, p_paths text[], p_masks bigint[],
    p_place bigint, p_now bigint, OUT x_id text, OUT x_role text, OUT x_path text, OUT x_rel int, OUT x_index int)
LANGUAGE plpgsql STABLE AS $$
DECLARE v_sk text COLLATE "C"; v_above text[]; v_lo text COLLATE "C"; v_hi text COLLATE "C";
BEGIN
  FOR t IN 1 .. array_length(p_paths, 1) LOOP
    v_sk := pathlock.sk(p_paths[t]); v_above := pathlock.above(p_paths[t]);
    v_lo := pathlock.lo(p_paths[t]); v_hi := pathlock.hi(p_paths[t]);
    SELECT q.id, q.role, q.path, x.rel, t INTO x_id, x_role, x_path, x_rel, x_index
      FROM pathlock.queued q
      JOIN pathlock.waiters w ON w.ns = q.ns AND w.id = q.id
      CROSS JOIN LATERAL (SELECT CASE WHEN q.sk = v_sk THEN 0 WHEN q.sk = ANY (v_above) THEN 1 ELSE 2 END AS rel) x
     WHERE q.ns = p_ns AND w.expires > p_now AND (p_place IS NULL OR q.place < p_place)
       AND ((q.k = ANY (pathlock.ks(v_above)) AND q.sk = ANY (v_above))
            OR (q.k = pathlock.k(v_sk) AND q.sk = v_sk)
            OR (q.k >= pathlock.k(v_lo) AND q.k <= pathlock.k(v_hi) AND q.sk > v_lo AND q.sk < v_hi))
       AND (q.fp <> p_fp OR ((CASE x.rel WHEN 0 THEN p_masks[3 * t - 2] WHEN 1 THEN p_masks[3 * t - 1]
                                          ELSE p_masks[3 * t] END) >> q.code) & 1 = 1)
     ORDER BY q.place, q.code LIMIT 1;
    IF FOUND THEN RETURN; END IF;
  END LOOP;
END $$;

-- The place in line of waiter p_waiter (not empty: acquire asks only
-- then), NULL when there is none or its reservation ended (as if reaped);
-- a live place of another request under that id is bad input.
CREATE OR REPLACE FUNCTION pathlock.my_place(p_ns text, p_waiter text, p_owner text, p_fp text, p_op text,
    p_paths text[], p_now bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_me pathlock.waiters;
BEGIN
  SELECT * INTO v_me FROM pathlock.waiters w WHERE w.ns = p_ns AND w.id = p_waiter;
  IF NOT FOUND OR v_me.expires <= p_now THEN RETURN NULL; END IF;
  IF v_me.owner <> p_owner OR v_me.fp <> p_fp OR v_me.op <> p_op OR v_me.paths <> p_paths THEN
    RAISE EXCEPTION 'waiter_id % is in use by another request', p_waiter USING ERRCODE = '22023';
  END IF;
  RETURN v_me.place;
END $$;

-- A lock the request already holds: its reentry (p_reenter_id, one more
-- hold) or the grant of its idempotency key (p_key, lease extended). NULL
-- when there is none (for a reentry: the caller is not the holder). A lock
-- whose lease ended counts as none, as if reaped (an ended grant of the
-- key is reaped here, so that a new grant can take the key).
CREATE OR REPLACE FUNCTION pathlock.held_again(p_ns text, p_fp text, p_owner text, p_op text, p_paths text[],
    p_ttl bigint, p_reenter_id text, p_reenter_token text, p_key text, p_now bigint)
RETURNS pathlock.locks LANGUAGE plpgsql AS $$
DECLARE v_lock pathlock.locks;
BEGIN
  IF p_reenter_id <> '' THEN
    SELECT * INTO v_lock FROM pathlock.locks l WHERE l.ns = p_ns AND l.id = p_reenter_id;
    IF NOT FOUND OR v_lock.token <> p_reenter_token OR v_lock.expires <= p_now THEN RETURN NULL; END IF;
    IF v_lock.fp <> p_fp OR v_lock.op <> p_op OR v_lock.paths <> p_paths THEN
      RAISE EXCEPTION 'reentry of lock %: the request must repeat its operation ''%'' and its targets',
        v_lock.id, v_lock.op USING ERRCODE = '22023';
    END IF;
    UPDATE pathlock.locks l SET holds = l.holds + 1, ttl = p_ttl, expires = greatest(l.expires, p_now + p_ttl)
     WHERE l.ns = p_ns AND l.id = p_reenter_id RETURNING * INTO v_lock;
  ELSIF p_key <> '' THEN
    SELECT * INTO v_lock FROM pathlock.locks l WHERE l.ns = p_ns AND l.idem = p_key;
    IF NOT FOUND THEN RETURN NULL; END IF;
    IF v_lock.expires <= p_now THEN PERFORM pathlock.reap(p_ns, p_now); RETURN NULL; END IF;
    IF v_lock.owner <> p_owner OR v_lock.fp <> p_fp OR v_lock.op <> p_op OR v_lock.paths <> p_paths THEN
      RAISE EXCEPTION 'idempotency_key is in use by another request (another owner, operation or targets)'
        USING ERRCODE = '22023';
    END IF;
    UPDATE pathlock.locks l SET expires = greatest(l.expires, p_now + p_ttl)
     WHERE l.ns = p_ns AND l.id = v_lock.id RETURNING * INTO v_lock;
  END IF;
  RETURN v_lock;
END $$;

-- The first conflict of a request, target by target: a held lock, by the
-- witness rule (docs/lua-protocol.md#the-conflicting-lock): the ancestors,
-- shortest first, then the path itself (one lookup of held_path); then,
-- when anything is held below the path (one probe), below it: one range of
-- held_code per refusing code, and for a target of another matrix, which
-- refuses every overlap, per code of each matrix present (found by a loose
-- index scan, one probe per matrix). Else, for a fair request, an older
-- place in line. With the holder's operation, owner and lease left. NULL
-- c_id: none. c_index is the request's target it hit (1-based).
CREATE OR REPLACE FUNCTION pathlock.first_conflict(p_ns text, p_fp text, p_paths text[], p_masks bigint[],
    p_fair boolean, p_place bigint, p_now bigint,
    OUT c_id text, OUT c_op text, OUT c_role text, OUT c_path text, OUT c_owner text, OUT c_expires_in bigint,
    OUT c_index int, OUT c_relation int, OUT c_queued boolean)
LANGUAGE plpgsql AS $$
DECLARE v_sk text COLLATE "C"; v_at text[]; v_lo text COLLATE "C"; v_hi text COLLATE "C"; r record;
BEGIN
  FOR t IN 1 .. array_length(p_paths, 1) LOOP
    v_sk := pathlock.sk(p_paths[t]); v_at := pathlock.above(p_paths[t]) || v_sk;
    v_lo := pathlock.lo(p_paths[t]); v_hi := pathlock.hi(p_paths[t]); c_index := t; c_queued := false;
    SELECT h.id, h.role, h.path, CASE WHEN h.sk = v_sk THEN 0 ELSE 1 END INTO c_id, c_role, c_path, c_relation
      FROM pathlock.held h
     WHERE h.ns = p_ns AND h.k = ANY (CASE WHEN octet_length(v_sk) <= 500 THEN v_at ELSE pathlock.ks(v_at) END)
       AND h.sk = ANY (v_at) AND (h.fp <> p_fp OR ((CASE WHEN h.sk = v_sk THEN p_masks[3 * t - 2]
                                                         ELSE p_masks[3 * t - 1] END) >> h.code) & 1 = 1)
     ORDER BY length(h.sk), h.fp <> p_fp, h.fp, h.code, h.fence DESC LIMIT 1;
    EXIT WHEN FOUND;
    CONTINUE WHEN NOT EXISTS (SELECT 1 FROM pathlock.held b
                               WHERE b.ns = p_ns AND b.k >= pathlock.k(v_lo) AND b.k <= pathlock.k(v_hi));
    WITH RECURSIVE fps(fp) AS (
      (SELECT h.fp FROM pathlock.held h WHERE h.ns = p_ns ORDER BY h.fp LIMIT 1)
      UNION ALL
      SELECT (SELECT h.fp FROM pathlock.held h WHERE h.ns = p_ns AND h.fp > fps.fp ORDER BY h.fp LIMIT 1)
        FROM fps WHERE fps.fp IS NOT NULL),
    kc AS (SELECT p_fp AS f, c FROM unnest(pathlock.bits(p_masks[3 * t])) c
           UNION ALL SELECT fps.fp, c FROM fps, generate_series(0, 63) c WHERE fps.fp <> p_fp)
    SELECT x.id, x.role, x.path, 2 INTO c_id, c_role, c_path, c_relation
      FROM kc CROSS JOIN LATERAL (SELECT h.* FROM pathlock.held h
                                   WHERE h.ns = p_ns AND h.fp = kc.f AND h.code = kc.c AND h.k >= pathlock.k(v_lo)
                                     AND h.k <= pathlock.k(v_hi) AND h.sk > v_lo AND h.sk < v_hi
                                   ORDER BY h.k, h.sk, h.fence DESC LIMIT 1) x
     ORDER BY x.sk, x.fp <> p_fp, x.fp, x.code, x.fence DESC LIMIT 1;
    EXIT WHEN FOUND;
  END LOOP;
  IF c_id IS NULL AND p_fair AND (SELECT max(w.expires) FROM pathlock.waiters w WHERE w.ns = p_ns) > p_now THEN
    r := pathlock.queued_conflict(p_ns, p_fp, p_paths, p_masks, p_place, p_now);
    c_id := r.x_id; c_role := r.x_role; c_path := r.x_path; c_relation := r.x_rel; c_index := r.x_index; c_queued := true;
  END IF;
  IF c_id IS NULL THEN c_index := NULL; c_queued := NULL; RETURN; END IF;
  SELECT x.op, x.owner, x.expires - p_now INTO c_op, c_owner, c_expires_in
    FROM (SELECT l.op, l.owner, l.expires FROM pathlock.locks l WHERE NOT c_queued AND l.ns = p_ns AND l.id = c_id
          UNION ALL
          SELECT w.op, w.owner, w.expires FROM pathlock.waiters w WHERE c_queued AND w.ns = p_ns AND w.id = c_id) x;
END $$;

-- A new lock and its targets; replies its fence (pathlock.next_fence). The
-- namespace's row is written only when it has none (pathlock.touch,
-- functions version 7: before, every grant also moved the row's fence for
-- `admin status`, an update of one hot row per grant; status reads the live
-- locks' fences instead).
CREATE OR REPLACE FUNCTION pathlock.new_lock(p_ns text, p_fp text, p_owner text, p_op text, p_roles text[],
    p_codes int[], p_paths text[], p_ttl bigint, p_id text, p_token text, p_key text, p_now bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_fence bigint := pathlock.next_fence();
BEGIN
  WITH l AS (INSERT INTO pathlock.locks (ns, id, token, owner, fp, op, roles, paths, fence, holds, ttl, expires, idem)
               VALUES (p_ns, p_id, p_token, p_owner, p_fp, p_op, p_roles, p_paths, v_fence, 1, p_ttl, p_now + p_ttl,
                       nullif(p_key, '')))
  INSERT INTO pathlock.held (ns, id, code, sk, k, fp, role, path, fence)
    SELECT p_ns, p_id, t.code, t.sk, t.k, p_fp, t.role, t.path, v_fence FROM pathlock.targets(p_codes, p_roles, p_paths) t;
  PERFORM pathlock.touch(p_ns, v_fence);
  RETURN v_fence;
END $$;

-- A grant's last check: a call that ran longer than p_budget ms (its
-- client's timeout less a margin, docs/postgres.md#timeouts) gives up
-- before it writes, so a grant its client stopped waiting for is never
-- committed. NULL: no budget (a version 3 engine's call).
CREATE OR REPLACE FUNCTION pathlock.in_time(p_budget bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF p_budget IS NOT NULL AND clock_timestamp() - statement_timestamp() > p_budget * interval '1 ms' THEN
    RAISE EXCEPTION 'pathlock: the call ran past its budget of % ms and was abandoned', p_budget
      USING ERRCODE = '57014';
  END IF;
END $$;

-- Would the request take namespace p_ns over its limits p_lim (acquire
-- calls this only when one of them applies)? p_grant: for a new lock of
-- p_owner, the limit on the namespace's live locks, then the one on the
-- owner's; else for a new place in line, the limit on places. First it
-- takes the namespace's limit lock for what it counts (and the owner's),
-- held to commit, exclusive: requests that count the same thing count one
-- after the other, each seeing the previous one's lock or place, so two
-- grants on disjoint paths cannot both take the last lock left. The keys
-- are pairs of ints, apart from the paths' bigint keys, and each call takes
-- them after its path locks and takes nothing after them that another
-- call could hold while it waits for them: no deadlock. Each count reads
-- the namespace's range (the owner's, for owner_locks) of an index that
-- begins with ns (locks_expires or locks_owner, waiters_expires), only as
-- far as the limit (a grant under the limit reads at most that many
-- entries), and on a refusal again in full for the reply. "Live" is
-- written (ns, expires) > (p_ns, p_now) beside ns = p_ns (an owner's:
-- (ns, owner, expires) > (p_ns, p_owner, p_now)): the same rows as
-- expires > p_now, but a condition that locks_ended (expires alone, every
-- namespace) cannot serve, so the planner cannot take that index and read
-- the live locks of every namespace (it did, from its estimates, where the
-- namespace or the owner held most of the table). Replies the limit's
-- name, the limit and the count, or three NULLs. Writes nothing.
CREATE OR REPLACE FUNCTION pathlock.limit_refusal(p_ns text, p_owner text, p_lim pathlock.limits, p_grant boolean,
    p_now bigint, OUT l_limit text, OUT l_max bigint, OUT l_count bigint) LANGUAGE plpgsql AS $$
BEGIN
  IF NOT p_grant THEN
    PERFORM pg_advisory_xact_lock(hashtext('pathlock-limits:' || p_ns), 4);
    SELECT count(*) INTO l_count
      FROM (SELECT 1 FROM pathlock.waiters w WHERE w.ns = p_ns AND (w.ns, w.expires) > (p_ns, p_now)
             LIMIT p_lim.places) x;
    IF l_count >= p_lim.places THEN
      l_limit := 'places'; l_max := p_lim.places;
      SELECT count(*) INTO l_count FROM pathlock.waiters w WHERE w.ns = p_ns AND (w.ns, w.expires) > (p_ns, p_now);
      RETURN;
    END IF;
  END IF;
  IF p_grant AND p_lim.locks IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtext('pathlock-limits:' || p_ns), 2);
    SELECT count(*) INTO l_count
      FROM (SELECT 1 FROM pathlock.locks l WHERE l.ns = p_ns AND (l.ns, l.expires) > (p_ns, p_now)
             LIMIT p_lim.locks) x;
    IF l_count >= p_lim.locks THEN
      l_limit := 'locks'; l_max := p_lim.locks;
      SELECT count(*) INTO l_count FROM pathlock.locks l WHERE l.ns = p_ns AND (l.ns, l.expires) > (p_ns, p_now);
      RETURN;
    END IF;
  END IF;
  IF p_grant AND p_lim.owner_locks IS NOT NULL THEN  -- ns and owner: '/' is in no namespace
    PERFORM pg_advisory_xact_lock(hashtext('pathlock-limits:' || p_ns || '/' || p_owner), 3);
    SELECT count(*) INTO l_count
      FROM (SELECT 1 FROM pathlock.locks l
             WHERE l.ns = p_ns AND l.owner = p_owner AND (l.ns, l.owner, l.expires) > (p_ns, p_owner, p_now)
             LIMIT p_lim.owner_locks) x;
    IF l_count >= p_lim.owner_locks THEN
      l_limit := 'owner_locks'; l_max := p_lim.owner_locks;
      SELECT count(*) INTO l_count FROM pathlock.locks l
       WHERE l.ns = p_ns AND l.owner = p_owner AND (l.ns, l.owner, l.expires) > (p_ns, p_owner, p_now);
      RETURN;
    END IF;
  END IF;
  l_count := NULL;
END $$;

-- acquire: one call per attempt (docs/postgres.md#functions). p_masks holds,
-- per target k, the refusal masks of its code for the relations same,
-- held_ancestor and held_descendant at 3k-2, 3k-1, 3k (bit c: held code c
-- of the same matrix refuses). Replies one row: status 'granted' (id,
-- token, fence, expires_in, holds), 'refused' (the conflict's fields,
-- c_index the request's target it hit, 1-based), 'not_holder' or, since
-- version 9, 'over_limit' (l_limit names the limit, l_max and l_count the
-- limit and the count). Limits (pathlock.limits) are looked up when the
-- request is no reentry and has no lock of its key: one probe of the
-- table's primary key, then, only when a limit applies,
-- pathlock.limit_refusal: for a limit on new locks whatever the conflict,
-- for the limit on places when a fair waiting request refused without a
-- place yet would take one. A refusal by a limit takes
-- nothing and gives up the request's place, if it had one. Bad input
-- found here raises SQLSTATE 22023 and changes nothing. p_budget (ms, the
-- engine's command timeout less a margin) bounds every lock wait of the call
-- (lock_timeout) and is checked again before a grant writes (in_time): past
-- it the call fails and changes nothing. A grant commits
-- with the server's synchronous_commit (durable by default); a refusal
-- changes only places in line and reaped leases, so it commits without
-- waiting for its WAL flush. Plans are generic: the statements are the same
-- every call, only their parameters change. A lease or place that ended
-- counts as gone; it is reaped when it is in the way (a conflict, a
-- reentry, a key, a waiter id), by a refusal or by a release, so a grant
-- that meets none spends no statement on reaping.
CREATE OR REPLACE FUNCTION pathlock.acquire(
    p_ns text, p_fp text, p_owner text, p_op text, p_roles text[], p_codes int[], p_masks bigint[], p_paths text[],
    p_ttl bigint, p_new_id text, p_new_token text, p_reenter_id text, p_reenter_token text, p_key text,
    p_fair boolean, p_waiter text, p_reserve bigint, p_budget bigint DEFAULT NULL,
    OUT status text, OUT id text, OUT token text, OUT fence bigint, OUT expires_in bigint, OUT holds int,
    OUT c_id text, OUT c_op text, OUT c_role text, OUT c_path text, OUT c_owner text, OUT c_expires_in bigint,
    OUT c_index int, OUT c_relation int, OUT c_queued boolean, OUT l_limit text, OUT l_max bigint, OUT l_count bigint)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off AS $$
DECLARE v_now bigint; v_place bigint; v_lock pathlock.locks; v_lim pathlock.limits; v_sync text; c record;
BEGIN
  IF p_budget IS NOT NULL THEN v_sync := set_config('lock_timeout', greatest(p_budget, 1) || 'ms', true); END IF;
  PERFORM pathlock.lock_paths(p_ns, p_paths);
  v_now := pathlock.now_ms();
  IF p_waiter <> '' THEN v_place := pathlock.my_place(p_ns, p_waiter, p_owner, p_fp, p_op, p_paths, v_now); END IF;
  IF p_reenter_id <> '' OR p_key <> '' THEN
    v_lock := pathlock.held_again(p_ns, p_fp, p_owner, p_op, p_paths, p_ttl, p_reenter_id, p_reenter_token, p_key,
                                  v_now);
  END IF;
  IF p_reenter_id <> '' AND v_lock.id IS NULL THEN status := 'not_holder'; RETURN; END IF;
  IF v_lock.id IS NOT NULL THEN
    PERFORM pathlock.in_time(p_budget);
    IF v_place IS NOT NULL THEN PERFORM pathlock.drop_place(p_ns, p_waiter, false); END IF;
    status := 'granted'; id := v_lock.id; token := v_lock.token; fence := v_lock.fence;
    expires_in := v_lock.expires - v_now; holds := v_lock.holds;
    RETURN;
  END IF;
  c := pathlock.first_conflict(p_ns, p_fp, p_paths, p_masks, p_fair, v_place, v_now);
  IF c.c_id IS NOT NULL AND NOT c.c_queued AND c.c_expires_in <= 0 THEN  -- an ended lease: reap, look again
    PERFORM pathlock.reap(p_ns, v_now);
    c := pathlock.first_conflict(p_ns, p_fp, p_paths, p_masks, p_fair, v_place, v_now);
  END IF;
  -- The namespace's own row, else the default's: '*' sorts below every
  -- character of a namespace. The limits on new locks are judged whatever
  -- the conflict (a request over one is told so, as by the Redis library
  -- and the embedded engine: it could not be granted once the conflict
  -- went); the limit on places when a refused request would take a new one.
  SELECT * INTO v_lim FROM pathlock.limits m WHERE m.ns IN (p_ns, '*') ORDER BY m.ns DESC LIMIT 1;
  IF coalesce(v_lim.locks, v_lim.owner_locks) IS NOT NULL THEN
    SELECT * INTO l_limit, l_max, l_count FROM pathlock.limit_refusal(p_ns, p_owner, v_lim, true, v_now);
  END IF;
  IF l_limit IS NULL AND c.c_id IS NOT NULL AND p_waiter <> '' AND p_reserve > 0 AND v_place IS NULL
     AND v_lim.places IS NOT NULL THEN  -- a new place
    SELECT * INTO l_limit, l_max, l_count FROM pathlock.limit_refusal(p_ns, p_owner, v_lim, false, v_now);
  END IF;
  IF l_limit IS NOT NULL THEN  -- answered now: nothing taken, no place kept (it would hold others back)
    status := 'over_limit'; v_sync := set_config('synchronous_commit', 'off', true);
    IF v_place IS NOT NULL THEN PERFORM pathlock.drop_place(p_ns, p_waiter, true); END IF;
    RETURN;
  END IF;
  IF c.c_id IS NOT NULL THEN
    status := 'refused'; c_id := c.c_id; c_op := c.c_op; c_role := c.c_role; c_path := c.c_path;
    c_owner := c.c_owner; c_expires_in := c.c_expires_in; c_index := c.c_index; c_relation := c.c_relation;
    c_queued := c.c_queued;
    v_sync := set_config('synchronous_commit', 'off', true);
    PERFORM pathlock.keep_place(p_ns, p_fp, p_owner, p_op, p_roles, p_codes, p_paths, p_waiter, p_reserve,
                                v_place, v_now);
    RETURN;
  END IF;
  PERFORM pathlock.in_time(p_budget);
  fence := pathlock.new_lock(p_ns, p_fp, p_owner, p_op, p_roles, p_codes, p_paths, p_ttl, p_new_id, p_new_token,
                             p_key, v_now);
  IF v_place IS NOT NULL THEN PERFORM pathlock.drop_place(p_ns, p_waiter, false); END IF;
  status := 'granted'; id := p_new_id; token := p_new_token; expires_in := p_ttl; holds := 1;
END $$;

-- A refused attempt: keeps (or takes, at the back of the line) the place
-- p_waiter for p_reserve ms (at most 2000), or, on the last attempt
-- (p_reserve = 0), gives it up.
CREATE OR REPLACE FUNCTION pathlock.keep_place(p_ns text, p_fp text, p_owner text, p_op text, p_roles text[],
    p_codes int[], p_paths text[], p_waiter text, p_reserve bigint, p_place bigint, p_now bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE v_place bigint;
BEGIN
  PERFORM pathlock.reap(p_ns, p_now);  -- ended leases, and an ended place under p_waiter
  IF p_waiter = '' THEN RETURN; END IF;
  IF p_reserve <= 0 THEN
    IF p_place IS NOT NULL THEN PERFORM pathlock.drop_place(p_ns, p_waiter, true); END IF;
  ELSIF p_place IS NOT NULL THEN
    UPDATE pathlock.waiters w SET expires = p_now + least(p_reserve, 2000) WHERE w.ns = p_ns AND w.id = p_waiter;
  ELSE
    v_place := nextval('pathlock.places');
    PERFORM pathlock.touch(p_ns, NULL);
    INSERT INTO pathlock.waiters (ns, id, owner, fp, op, roles, paths, place, since, expires)
      VALUES (p_ns, p_waiter, p_owner, p_fp, p_op, p_roles, p_paths, v_place, p_now,
              p_now + least(p_reserve, 2000));
    INSERT INTO pathlock.queued (ns, id, code, sk, k, fp, role, path, place)
      SELECT p_ns, p_waiter, t.code, t.sk, t.k, p_fp, t.role, t.path, v_place
        FROM pathlock.targets(p_codes, p_roles, p_paths) t;
  END IF;
END $$;

-- Takes place p_id out of the line; true when there was one. Wakes the
-- namespace's waiters when p_wake: a place given up frees what it held
-- back; one left for the grant of its request frees nothing (the new lock
-- refuses what the place refused). Needs no lock of the paths: a removal
-- only ever lets others in, and a call that did not see it yet is woken.
CREATE OR REPLACE FUNCTION pathlock.drop_place(p_ns text, p_id text, p_wake boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE v text[];
BEGIN
  DELETE FROM pathlock.waiters w WHERE w.ns = p_ns AND w.id = p_id RETURNING w.paths INTO v;
  IF NOT FOUND THEN RETURN false; END IF;
  IF p_wake THEN PERFORM pathlock.wake(p_ns, v); END IF;
  RETURN true;
END $$;
-- A waiter that gives up (a stop, a timeout) leaves the line. Commits
-- without waiting for its WAL flush (functions version 6): a place lost by
-- a crash is a reservation that ends by itself within 2 s, and a crash
-- ends every waiting call's session anyway.
CREATE OR REPLACE FUNCTION pathlock.leave(p_ns text, p_id text) RETURNS boolean LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off AS $$
DECLARE v_sync text := set_config('synchronous_commit', 'off', true);
BEGIN
  RETURN pathlock.drop_place(p_ns, p_id, true);
END $$;

-- Cleans up after namespaces nobody calls any more (docs/postgres.md#cleanup):
-- removes up to p_limit locks whose lease ended and up to p_limit places
-- whose reservation ended, in any namespace, oldest first (the indexes
-- locks_ended and waiters_ended), wakes their waiters, and drops the
-- pathlock.namespaces row of each namespace this left with no lock and no
-- place. Fences need no row: they come from pathlock.fences, one sequence
-- for every namespace, never below the server clock in microseconds
-- (next_fence), so a namespace that comes back gets a larger fence than any
-- it had. Waits for nothing (rows another call holds are skipped: that call
-- removes them or the next sweep does). Run by every release, and by hand or
-- from cron as SELECT pathlock.sweep(pathlock.now_ms(), 1000). Replies how
-- many locks and places it removed.
CREATE OR REPLACE FUNCTION pathlock.sweep(p_now bigint, p_limit int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r record; v_ns text[] := '{}'; v_count int := 0;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pathlock.locks l WHERE l.expires <= p_now)
     AND NOT EXISTS (SELECT 1 FROM pathlock.waiters w WHERE w.expires <= p_now) THEN
    RETURN 0;
  END IF;
  -- One sweeper at a time (this two-int key is apart from the paths' bigint
  -- keys): concurrent sweeps all walked the head of locks_ended past the rows
  -- the others held, and a backlog of ended leases collapsed every release.
  IF NOT pg_try_advisory_xact_lock(1886151794, 1) THEN
    RETURN 0;
  END IF;
  FOR r IN WITH l AS (DELETE FROM pathlock.locks l
                      WHERE (l.ns, l.id) IN (SELECT x.ns, x.id FROM pathlock.locks x WHERE x.expires <= p_now
                                              ORDER BY x.expires LIMIT p_limit FOR UPDATE SKIP LOCKED)
                      RETURNING l.ns, l.paths),
                w AS (DELETE FROM pathlock.waiters w
                      WHERE (w.ns, w.id) IN (SELECT x.ns, x.id FROM pathlock.waiters x WHERE x.expires <= p_now
                                              ORDER BY x.expires LIMIT p_limit FOR UPDATE SKIP LOCKED)
                      RETURNING w.ns, w.paths)
           SELECT ns, paths FROM l UNION ALL SELECT ns, paths FROM w LOOP
    PERFORM pathlock.wake(r.ns, r.paths);
    v_ns := v_ns || r.ns;
    v_count := v_count + 1;
  END LOOP;
  DELETE FROM pathlock.namespaces n
   WHERE n.ns IN (SELECT x.ns FROM pathlock.namespaces x WHERE x.ns = ANY (v_ns) FOR UPDATE SKIP LOCKED)
     AND NOT EXISTS (SELECT 1 FROM pathlock.locks l WHERE l.ns = n.ns)
     AND NOT EXISTS (SELECT 1 FROM pathlock.waiters w WHERE w.ns = n.ns);
  RETURN v_count;
END $$;

-- Drops one hold of lock p_id (p_token NULL: every hold, force_release).
-- Replies the holds left, or NULL when no live lock has this id and token.
-- Commits without waiting for its WAL flush: a release lost by a crash of
-- the server leaves the lock held until its lease ends (what a client that
-- died would leave), and the next durable commit (a grant) flushes it.
-- Takes no lock of the paths: a removal only lets others in (a call that
-- read before it is woken by its notification), and two calls on the same
-- lock meet on its row.
CREATE OR REPLACE FUNCTION pathlock.release(p_ns text, p_id text, p_token text) RETURNS int
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off AS $$
DECLARE v_paths text[]; v_left int; v_sync text := set_config('synchronous_commit', 'off', true);
  v_now bigint := pathlock.now_ms();
BEGIN
  -- Ended leases and places, of this namespace and of others, oldest first
  -- (docs/postgres.md#cleanup). Version 7: no reap of this namespace first;
  -- an ended lease in a request's way is reaped by that request.
  PERFORM pathlock.sweep(v_now, 64);
  DELETE FROM pathlock.locks l
   WHERE l.ns = p_ns AND l.id = p_id AND l.expires > v_now
     AND (p_token IS NULL OR (l.token = p_token AND l.holds <= 1))
  RETURNING l.paths INTO v_paths;
  IF FOUND THEN
    PERFORM pathlock.wake(p_ns, v_paths);
    RETURN 0;
  END IF;
  UPDATE pathlock.locks l SET holds = l.holds - 1
   WHERE l.ns = p_ns AND l.id = p_id AND l.token = p_token AND l.expires > v_now RETURNING l.holds INTO v_left;
  RETURN v_left;
END $$;

-- Extends lock p_id's lease to now + ttl (p_ttl NULL: its own TTL; a given
-- one becomes its TTL). Replies the lease left, or NULL (no such lock).
-- Durable like a grant: a renewal lost by a crash would end the lease
-- before the time its holder was told. Touches its own row only (a lease
-- that ended is not renewed, as if reaped): it waits for no other call.
CREATE OR REPLACE FUNCTION pathlock.renew(p_ns text, p_id text, p_token text, p_ttl bigint) RETURNS bigint
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off AS $$
DECLARE v_now bigint; v_left bigint;
BEGIN
  v_now := pathlock.now_ms();
  UPDATE pathlock.locks l SET ttl = coalesce(p_ttl, l.ttl), expires = v_now + coalesce(p_ttl, l.ttl)
   WHERE l.ns = p_ns AND l.id = p_id AND l.token = p_token AND l.expires > v_now RETURNING l.expires - v_now INTO v_left;
  RETURN v_left;
END $$;

-- Read-only: every live held lock and place in line that refuses a request
-- (docs: LockEngine::blockers), ordered like core::order_blockers, at most
-- p_limit + 1 rows (the extra one says "truncated").
CREATE OR REPLACE FUNCTION pathlock.blockers(p_ns text, p_fp text, p_roles text[], p_paths text[], p_masks bigint[],
    p_fair boolean, p_limit int)
RETURNS TABLE (queued boolean, id text, owner text, op text, role text, path text, requested_role text,
               requested_path text, relation int, fence bigint, holds int, expires_in bigint, waited bigint)
LANGUAGE sql STABLE AS $$
  WITH t AS (SELECT pathlock.now_ms() AS now),
  req0 AS (SELECT i, p_roles[i] AS rrole, p_paths[i] AS rpath, pathlock.sk(p_paths[i]) AS rsk,
                  pathlock.above(p_paths[i]) AS above, pathlock.lo(p_paths[i]) AS lo, pathlock.hi(p_paths[i]) AS hi,
                  p_masks[3 * i - 2] AS m0, p_masks[3 * i - 1] AS m1, p_masks[3 * i] AS m2
             FROM generate_subscripts(p_paths, 1) i),
  req AS (SELECT r.*, pathlock.k(r.rsk) AS rk, pathlock.ks(r.above) AS above_k, pathlock.k(r.lo) AS lo_k,
                 pathlock.k(r.hi) AS hi_k FROM req0 r),
  rows AS (
    SELECT r.i, false AS queued, l.id, l.owner, l.op, h.role, h.path, r.rrole, r.rpath, x.rel, l.fence, l.holds,
           l.expires - t.now AS expires_in, 0::bigint AS waited
      FROM req r CROSS JOIN t
      JOIN pathlock.held h ON h.ns = p_ns AND ((h.k = ANY (r.above_k) AND h.sk = ANY (r.above))
                                               OR (h.k = r.rk AND h.sk = r.rsk)
                                               OR (h.k >= r.lo_k AND h.k <= r.hi_k AND h.sk > r.lo AND h.sk < r.hi))
      CROSS JOIN LATERAL (SELECT CASE WHEN h.sk = r.rsk THEN 0 WHEN h.sk = ANY (r.above) THEN 1 ELSE 2 END AS rel) x
      JOIN pathlock.locks l ON l.ns = h.ns AND l.id = h.id AND l.expires > t.now
     WHERE h.fp <> p_fp OR ((CASE x.rel WHEN 0 THEN r.m0 WHEN 1 THEN r.m1 ELSE r.m2 END) >> h.code) & 1 = 1
    UNION ALL
    SELECT r.i, true, w.id, w.owner, w.op, q.role, q.path, r.rrole, r.rpath, x.rel, 0, 0,
           w.expires - t.now, t.now - w.since
      FROM req r CROSS JOIN t
      JOIN pathlock.queued q ON p_fair AND q.ns = p_ns
                             AND ((q.k = ANY (r.above_k) AND q.sk = ANY (r.above))
                                  OR (q.k = r.rk AND q.sk = r.rsk)
                                  OR (q.k >= r.lo_k AND q.k <= r.hi_k AND q.sk > r.lo AND q.sk < r.hi))
      CROSS JOIN LATERAL (SELECT CASE WHEN q.sk = r.rsk THEN 0 WHEN q.sk = ANY (r.above) THEN 1 ELSE 2 END AS rel) x
      JOIN pathlock.waiters w ON w.ns = q.ns AND w.id = q.id AND w.expires > t.now
     WHERE q.fp <> p_fp OR ((CASE x.rel WHEN 0 THEN r.m0 WHEN 1 THEN r.m1 ELSE r.m2 END) >> q.code) & 1 = 1)
  SELECT queued, id, owner, op, role, path, rrole, rpath, rel, fence, holds, expires_in, waited FROM rows
   ORDER BY i, queued, CASE rel WHEN 1 THEN 0 WHEN 0 THEN 1 ELSE 2 END,
            CASE WHEN rel = 1 THEN octet_length(path) ELSE 0 END, path COLLATE "C", fence, id COLLATE "C"
   LIMIT p_limit + 1 $$;

-- The text form of a limits row (core/limits.hpp): "L P O", each a number
-- or "-" for no limit.
CREATE OR REPLACE FUNCTION pathlock.limits_text(m pathlock.limits) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT concat_ws(' ', coalesce(m.locks::text, '-'), coalesce(m.places::text, '-'),
                    coalesce(m.owner_locks::text, '-')) $$;

-- Sets the limits of namespace p_ns (its own, replacing the default whole;
-- '*': the default of every namespace without its own) to p_limits, in
-- that text form: "- - -" is no limits (for '*', the row goes: no default),
-- NULL takes the namespace's own away. Every engine on the database
-- enforces them from the commit on. By hand:
-- SELECT pathlock.set_limits('tenant-a', '1000 100 50'). Bad input raises
-- SQLSTATE 22023. Takes no lock of any path: a grant that read the limits
-- before this commit was judged by those.
CREATE OR REPLACE FUNCTION pathlock.set_limits(p_ns text, p_limits text) RETURNS void LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off AS $$
DECLARE v bigint[];
BEGIN
  IF p_ns IS NULL OR (p_ns <> '*' AND p_ns !~ '^[A-Za-z0-9._:-]{1,128}$') THEN
    RAISE EXCEPTION 'limits: bad namespace %', coalesce(p_ns, 'NULL') USING ERRCODE = '22023';
  END IF;
  IF p_limits IS NULL OR (p_ns = '*' AND p_limits = '- - -') THEN
    DELETE FROM pathlock.limits m WHERE m.ns = p_ns;
    RETURN;
  END IF;
  IF p_limits !~ '^([0-9]{1,10}|-) ([0-9]{1,10}|-) ([0-9]{1,10}|-)$' THEN
    RAISE EXCEPTION 'limits must be "L P O", each 0..1000000000 or -, got "%"', p_limits USING ERRCODE = '22023';
  END IF;
  v := string_to_array(p_limits, ' ', '-')::bigint[];  -- "-": NULL
  IF 1000000000 < ANY (v) THEN
    RAISE EXCEPTION 'limits must be "L P O", each 0..1000000000 or -, got "%"', p_limits USING ERRCODE = '22023';
  END IF;
  INSERT INTO pathlock.limits AS m (ns, locks, places, owner_locks) VALUES (p_ns, v[1], v[2], v[3])
    ON CONFLICT (ns) DO UPDATE SET locks = excluded.locks, places = excluded.places, owner_locks = excluded.owner_locks;
END $$;

-- The limits of namespace p_ns and its use of them (LockEngine::limits):
-- the default and its own (NULL: none) in the text form, its live locks
-- and places, and the owner with the most live locks (ties: the smallest
-- name in byte order; NULL when no lock is held) with their count.
-- Read-only; counts every live lock and place of the namespace (its
-- entries of locks_expires or locks_owner, and of waiters_expires; the
-- conditions written as in pathlock.limit_refusal).
CREATE OR REPLACE FUNCTION pathlock.limits_status(p_ns text, OUT s_defaults text, OUT s_overrides text,
    OUT s_locks bigint, OUT s_places bigint, OUT s_owner_locks bigint, OUT s_owner text)
LANGUAGE plpgsql STABLE AS $$
DECLARE v_now bigint := pathlock.now_ms();
BEGIN
  SELECT pathlock.limits_text(m) INTO s_defaults FROM pathlock.limits m WHERE m.ns = '*';
  s_defaults := coalesce(s_defaults, '- - -');
  SELECT pathlock.limits_text(m) INTO s_overrides FROM pathlock.limits m WHERE m.ns = p_ns;
  SELECT count(*) INTO s_locks FROM pathlock.locks l WHERE l.ns = p_ns AND (l.ns, l.expires) > (p_ns, v_now);
  SELECT count(*) INTO s_places FROM pathlock.waiters w WHERE w.ns = p_ns AND (w.ns, w.expires) > (p_ns, v_now);
  SELECT l.owner, count(*) INTO s_owner, s_owner_locks FROM pathlock.locks l
   WHERE l.ns = p_ns AND (l.ns, l.expires) > (p_ns, v_now)
   GROUP BY l.owner ORDER BY count(*) DESC, l.owner COLLATE "C" LIMIT 1;
  s_owner_locks := coalesce(s_owner_locks, 0);
END $$;

-- The version of the functions above: an engine that finds an older one
-- runs this script again (every statement in it can be repeated).
-- The places in line a conversion of lock p_id does not wait for
-- (docs/design.md#conversion): those of conversions of p_id, and those
-- (other than p_self) that the lock as it is now refuses, whose waiters
-- wait for it anyway. p_refuse holds, for every code c of
-- the lock's matrix, the masks of held codes that refuse c for the relations
-- same, held_ancestor and held_descendant at 3c+1, 3c+2, 3c+3; a place of
-- another matrix is refused by any overlap. Reads the namespace's line.
CREATE OR REPLACE FUNCTION pathlock.refused_places(p_ns text, p_id text, p_self text, p_refuse bigint[])
RETURNS text[] LANGUAGE sql STABLE AS $$
  SELECT ARRAY(SELECT w.id FROM pathlock.waiters w WHERE w.ns = p_ns AND w.converts = p_id) ||
         coalesce(array_agg(DISTINCT q.id), '{}')
    FROM pathlock.held h JOIN pathlock.queued q ON q.ns = h.ns
         CROSS JOIN LATERAL (SELECT CASE WHEN q.sk = h.sk THEN 0
                                         WHEN q.sk > pathlock.lo(h.path) AND q.sk < pathlock.hi(h.path) THEN 1
                                         WHEN h.sk > pathlock.lo(q.path) AND h.sk < pathlock.hi(q.path) THEN 2 END AS rel) x
   WHERE h.ns = p_ns AND h.id = p_id AND q.id <> p_self AND x.rel IS NOT NULL
     AND (q.fp <> h.fp OR (p_refuse[3 * q.code + x.rel + 1] >> h.code) & 1 = 1) $$;

-- The oldest place in line (older than p_place when set, none of p_skip)
-- that refuses a conversion's new targets as if it held its lock: as
-- queued_conflict, for convert.
CREATE OR REPLACE FUNCTION pathlock.queued_for_convert(p_ns text, p_fp text, p_paths text[], p_masks bigint[],
    p_place bigint, p_now bigint, p_skip text[], OUT x_id text, OUT x_role text, OUT x_path text, OUT x_rel int,
    OUT x_index int) LANGUAGE plpgsql STABLE AS $$
BEGIN
  FOR t IN 1 .. array_length(p_paths, 1) LOOP
    SELECT q.id, q.role, q.path, x.rel, t INTO x_id, x_role, x_path, x_rel, x_index
      FROM pathlock.queued q
      JOIN pathlock.waiters w ON w.ns = q.ns AND w.id = q.id
      CROSS JOIN LATERAL (SELECT CASE WHEN q.sk = pathlock.sk(p_paths[t]) THEN 0
                                      WHEN q.sk = ANY (pathlock.above(p_paths[t])) THEN 1
                                      WHEN q.sk > pathlock.lo(p_paths[t]) AND q.sk < pathlock.hi(p_paths[t]) THEN 2
                                 END AS rel) x
     WHERE q.ns = p_ns AND w.expires > p_now AND (p_place IS NULL OR q.place < p_place) AND x.rel IS NOT NULL
       AND NOT q.id = ANY (p_skip)
       AND (q.fp <> p_fp OR ((CASE x.rel WHEN 0 THEN p_masks[3 * t - 2] WHEN 1 THEN p_masks[3 * t - 1]
                                          ELSE p_masks[3 * t] END) >> q.code) & 1 = 1)
     ORDER BY q.place, q.code LIMIT 1;
    IF FOUND THEN RETURN; END IF;
  END LOOP;
END $$;

-- convert (functions version 10; docs/design.md#conversion): lock p_id,
-- proven by p_token, gets operation p_op on p_paths (roles, codes, masks as
-- acquire's) in one step, or stays exactly as it was. Judged as an acquire
-- of the new targets with the lock's own rows set aside (a subtransaction
-- that is rolled back when refused), against held locks, then (p_fair)
-- against older places except its own, those of conversions of this lock
-- and those the lock as it is now refuses (pathlock.refused_places). A
-- refusal by a lock whose waiting conversion this lock refuses is
-- 'would_deadlock' (answered at once, no place kept). Granted: a new fence,
-- the lease now + ttl, p_key stored as the conversion's key; a retry with
-- that key and the same operation and targets gets the lock unchanged
-- (lease extended). Replies acquire's columns; status also 'not_holder'
-- and 'over_limit' (a new place over the namespace's limit on places). A
-- lock with more holds than one is bad input (22023). Durable like a grant.
CREATE OR REPLACE FUNCTION pathlock.convert(
    p_ns text, p_fp text, p_id text, p_token text, p_op text, p_roles text[], p_codes int[], p_masks bigint[],
    p_paths text[], p_ttl bigint, p_key text, p_fair boolean, p_waiter text, p_reserve bigint, p_budget bigint,
    p_refuse bigint[],
    OUT status text, OUT id text, OUT token text, OUT fence bigint, OUT expires_in bigint, OUT holds int,
    OUT c_id text, OUT c_op text, OUT c_role text, OUT c_path text, OUT c_owner text, OUT c_expires_in bigint,
    OUT c_index int, OUT c_relation int, OUT c_queued boolean, OUT l_limit text, OUT l_max bigint, OUT l_count bigint)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_bitmapscan = off AS $$
DECLARE v_now bigint; v_place bigint; v_lock pathlock.locks; v_skip text[]; v_line boolean; v_sync text;
  c record; v_lim pathlock.limits;
BEGIN
  IF p_budget IS NOT NULL THEN v_sync := set_config('lock_timeout', greatest(p_budget, 1) || 'ms', true); END IF;
  PERFORM pathlock.lock_paths(p_ns, p_paths);
  v_now := pathlock.now_ms();
  SELECT * INTO v_lock FROM pathlock.locks l WHERE l.ns = p_ns AND l.id = p_id FOR UPDATE;
  IF NOT FOUND OR v_lock.token <> p_token OR v_lock.expires <= v_now THEN
    status := 'not_holder';
    IF p_waiter <> '' THEN PERFORM pathlock.drop_place(p_ns, p_waiter, true); END IF;
    RETURN;
  END IF;
  IF p_waiter <> '' THEN v_place := pathlock.my_place(p_ns, p_waiter, v_lock.owner, p_fp, p_op, p_paths, v_now); END IF;
  IF p_key <> '' AND v_lock.convert_key = p_key AND v_lock.op = p_op AND v_lock.paths = p_paths THEN
    PERFORM pathlock.in_time(p_budget);
    UPDATE pathlock.locks l SET expires = greatest(l.expires, v_now + p_ttl) WHERE l.ns = p_ns AND l.id = p_id
    RETURNING * INTO v_lock;
    IF v_place IS NOT NULL THEN PERFORM pathlock.drop_place(p_ns, p_waiter, false); END IF;
    status := 'granted'; id := v_lock.id; token := v_lock.token; fence := v_lock.fence;
    expires_in := v_lock.expires - v_now; holds := v_lock.holds;
    RETURN;
  END IF;
  IF v_lock.holds > 1 THEN
    RAISE EXCEPTION 'lock % has % holds: a lock is converted only with one hold (its other holders re-entered it for '
                    'what it is); release the others first', p_id, v_lock.holds USING ERRCODE = '22023';
  END IF;
  -- (One probe when nobody waits, the usual case: then no line is read.)
  v_line := coalesce((SELECT max(w.expires) FROM pathlock.waiters w WHERE w.ns = p_ns) > v_now, false);
  v_skip := CASE WHEN v_line THEN pathlock.refused_places(p_ns, p_id, p_waiter, p_refuse) ELSE '{}' END;
  BEGIN  -- the lock's own rows set aside while it is judged; rolled back when refused
    DELETE FROM pathlock.held h WHERE h.ns = p_ns AND h.id = p_id;
    c := pathlock.first_conflict(p_ns, p_fp, p_paths, p_masks, false, NULL, v_now);
    IF c.c_id IS NOT NULL AND c.c_expires_in <= 0 THEN  -- an ended lease: reap, look again
      PERFORM pathlock.reap(p_ns, v_now);
      c := pathlock.first_conflict(p_ns, p_fp, p_paths, p_masks, false, NULL, v_now);
    END IF;
    IF c.c_id IS NOT NULL THEN
      status := CASE WHEN EXISTS (SELECT 1 FROM pathlock.waiters w WHERE w.ns = p_ns AND w.converts = c.c_id
                                     AND w.expires > v_now AND w.id = ANY (v_skip))
                     THEN 'would_deadlock' ELSE 'refused' END;
      RAISE SQLSTATE 'PLCV1';
    END IF;
    IF p_fair AND v_line THEN
      SELECT * INTO c FROM pathlock.queued_for_convert(p_ns, p_fp, p_paths, p_masks, v_place, v_now, v_skip) x;
      IF c.x_id IS NOT NULL THEN
        status := 'refused';
        SELECT c.x_id AS c_id, w.op AS c_op, c.x_role AS c_role, c.x_path AS c_path, w.owner AS c_owner,
               w.expires - v_now AS c_expires_in, c.x_index AS c_index, c.x_rel AS c_relation, true AS c_queued
          INTO c FROM pathlock.waiters w WHERE w.ns = p_ns AND w.id = c.x_id;
        RAISE SQLSTATE 'PLCV1';
      END IF;
    END IF;
    PERFORM pathlock.in_time(p_budget);
    fence := pathlock.next_fence();
    UPDATE pathlock.locks l SET op = p_op, roles = p_roles, paths = p_paths, fence = convert.fence, ttl = p_ttl,
           expires = v_now + p_ttl, convert_key = nullif(p_key, '')
     WHERE l.ns = p_ns AND l.id = p_id;
    INSERT INTO pathlock.held (ns, id, code, sk, k, fp, role, path, fence)
      SELECT p_ns, p_id, t.code, t.sk, t.k, p_fp, t.role, t.path, convert.fence
        FROM pathlock.targets(p_codes, p_roles, p_paths) t;
  EXCEPTION WHEN SQLSTATE 'PLCV1' THEN
    NULL;  -- refused: the lock's rows are back, nothing changed
  END;
  IF status IS NULL THEN
    PERFORM pathlock.wake(p_ns, v_lock.paths);  -- what it held before is free
    IF v_place IS NOT NULL THEN PERFORM pathlock.drop_place(p_ns, p_waiter, false); END IF;
    status := 'granted'; id := p_id; token := p_token; expires_in := p_ttl; holds := 1;
    RETURN;
  END IF;
  c_id := c.c_id; c_op := c.c_op; c_role := c.c_role; c_path := c.c_path; c_owner := c.c_owner;
  c_expires_in := c.c_expires_in; c_index := c.c_index; c_relation := c.c_relation; c_queued := c.c_queued;
  v_sync := set_config('synchronous_commit', 'off', true);
  IF status = 'would_deadlock' THEN
    IF v_place IS NOT NULL THEN PERFORM pathlock.drop_place(p_ns, p_waiter, true); END IF;
    RETURN;
  END IF;
  IF p_waiter <> '' AND p_reserve > 0 AND v_place IS NULL THEN
    SELECT * INTO v_lim FROM pathlock.limits m WHERE m.ns IN (p_ns, '*') ORDER BY m.ns DESC LIMIT 1;
    IF v_lim.places IS NOT NULL THEN
      SELECT * INTO l_limit, l_max, l_count FROM pathlock.limit_refusal(p_ns, v_lock.owner, v_lim, false, v_now);
      IF l_limit IS NOT NULL THEN status := 'over_limit'; RETURN; END IF;
    END IF;
  END IF;
  PERFORM pathlock.keep_place(p_ns, p_fp, v_lock.owner, p_op, p_roles, p_codes, p_paths, p_waiter, p_reserve,
                              v_place, v_now);
  IF p_waiter <> '' AND p_reserve > 0 THEN
    UPDATE pathlock.waiters w SET converts = p_id WHERE w.ns = p_ns AND w.id = p_waiter;
  END IF;
END $$;

CREATE OR REPLACE FUNCTION pathlock.functions_version() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 10 $$;

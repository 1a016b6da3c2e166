-- The pathlock schema in PostgreSQL, layout 1 (docs/postgres.md). Run once
-- per database by the first engine that finds no schema (under an advisory
-- lock, so engines starting together do not race), or by an administrator.
-- Every write function serialises the calls of one namespace with a
-- transaction-scoped advisory lock on the namespace's hash and runs as one
-- transaction: check and write are one atomic step, never a check followed
-- by an insert another caller can interleave with.
--
-- Paths are stored with a sort key `sk`: the path with every '/' written as
-- chr(1) (the root is chr(1) alone). In the "C" collation chr(1) sorts below
-- every byte a name may hold, so the targets strictly below path P are
-- exactly the keys in the open range (lo(P), hi(P)) and their order is the
-- component-wise path order of the witness rule; a path's strict ancestors
-- are the keys of its prefixes. Both are index lookups: O(depth) probes and
-- one range per refusing code, never a scan of a namespace's locks.
-- The indexes hold `k`, the first 500 characters of `sk` (a B-tree entry
-- must stay below about 2.7 kB, paths may have 4096 bytes): k order is sk
-- order up to ties, which the queries break on sk.
CREATE SCHEMA IF NOT EXISTS pathlock;
CREATE TABLE IF NOT EXISTS pathlock.meta (layout int NOT NULL);
CREATE TABLE IF NOT EXISTS pathlock.namespaces (
  ns text COLLATE "C" PRIMARY KEY,
  fence bigint NOT NULL DEFAULT 0,  -- the last fence given in the namespace
  place bigint NOT NULL DEFAULT 0   -- the last place in line given
);
CREATE TABLE IF NOT EXISTS pathlock.locks (
  ns text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, token text NOT NULL, owner text NOT NULL,
  fp text NOT NULL,  -- fingerprint of the matrix whose library granted it
  op text NOT NULL, roles text[] NOT NULL, paths text[] NOT NULL,
  fence bigint NOT NULL, holds int NOT NULL, ttl bigint NOT NULL,
  expires bigint NOT NULL,  -- ms since the epoch, server clock
  idem text COLLATE "C",    -- idempotency key, or NULL
  PRIMARY KEY (ns, id));
CREATE UNIQUE INDEX IF NOT EXISTS locks_idem ON pathlock.locks (ns, idem) WHERE idem IS NOT NULL;
CREATE INDEX IF NOT EXISTS locks_fence ON pathlock.locks (ns, fence);
CREATE INDEX IF NOT EXISTS locks_expires ON pathlock.locks (ns, expires);
-- One row per target of a held lock.
CREATE TABLE IF NOT EXISTS pathlock.held (
  ns text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, code int NOT NULL,
  sk text COLLATE "C" NOT NULL, k text COLLATE "C" NOT NULL,
  fp text NOT NULL, role text NOT NULL, path text NOT NULL, fence bigint NOT NULL,
  PRIMARY KEY (ns, id, code),
  FOREIGN KEY (ns, id) REFERENCES pathlock.locks (ns, id) ON DELETE CASCADE);
CREATE INDEX IF NOT EXISTS held_path ON pathlock.held (ns, k);                -- ancestors, same path
CREATE INDEX IF NOT EXISTS held_code ON pathlock.held (ns, fp, code, k);      -- below a path, per code
-- Places in line (fair waiting requests) and their targets.
CREATE TABLE IF NOT EXISTS pathlock.waiters (
  ns text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, owner text NOT NULL, fp text NOT NULL,
  op text NOT NULL, roles text[] NOT NULL, paths text[] NOT NULL,
  place bigint NOT NULL, since bigint NOT NULL, expires bigint NOT NULL,
  PRIMARY KEY (ns, id));
CREATE INDEX IF NOT EXISTS waiters_place ON pathlock.waiters (ns, place);
CREATE INDEX IF NOT EXISTS waiters_expires ON pathlock.waiters (ns, expires);
CREATE TABLE IF NOT EXISTS pathlock.queued (
  ns text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, code int NOT NULL,
  sk text COLLATE "C" NOT NULL, k text COLLATE "C" NOT NULL,
  fp text NOT NULL, role text NOT NULL, path text NOT NULL, place bigint NOT NULL,
  PRIMARY KEY (ns, id, code),
  FOREIGN KEY (ns, id) REFERENCES pathlock.waiters (ns, id) ON DELETE CASCADE);
CREATE INDEX IF NOT EXISTS queued_path ON pathlock.queued (ns, k);

CREATE OR REPLACE FUNCTION pathlock.now_us() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint $$;
CREATE OR REPLACE FUNCTION pathlock.now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT pathlock.now_us() / 1000 $$;
CREATE OR REPLACE FUNCTION pathlock.sk(p text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT translate(p, '/', chr(1)) COLLATE "C" $$;
-- The index key of sort key s.
CREATE OR REPLACE FUNCTION pathlock.k(s text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT left(s, 500) COLLATE "C" $$;
CREATE OR REPLACE FUNCTION pathlock.ks(a text[]) RETURNS text[] LANGUAGE sql IMMUTABLE AS
$$ SELECT coalesce(array_agg(pathlock.k(x)), '{}') FROM unnest(a) x $$;
-- The sort keys of the strict ancestors of p, root first.
CREATE OR REPLACE FUNCTION pathlock.above(p text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(array_agg(CASE WHEN i = 1 THEN chr(1) ELSE pathlock.sk(left(p, i - 1)) END ORDER BY i), '{}')
  FROM generate_series(1, length(p)) i WHERE p <> '/' AND substr(p, i, 1) = '/' $$;
-- The open range of sort keys strictly below p.
CREATE OR REPLACE FUNCTION pathlock.lo(p text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN p = '/' THEN chr(1) ELSE pathlock.sk(p) || chr(1) END COLLATE "C" $$;
CREATE OR REPLACE FUNCTION pathlock.hi(p text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN p = '/' THEN chr(2) ELSE pathlock.sk(p) || chr(2) END COLLATE "C" $$;
-- The codes whose bit is set in mask m, ascending (a loop up to the highest
-- bit: half the cost of a 64-row generate_series for the usual small codes).
CREATE OR REPLACE FUNCTION pathlock.bits(m bigint) RETURNS int[] LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE r int[] := '{}'; c int := 0; top boolean := m < 0;
BEGIN
  m := m & 9223372036854775807;
  WHILE m <> 0 LOOP
    IF m & 1 = 1 THEN r := r || c; END IF;
    m := m >> 1; c := c + 1;
  END LOOP;
  RETURN CASE WHEN top THEN r || 63 ELSE r END;
END $$;
-- Is `p` at or inside `prefix`?
CREATE OR REPLACE FUNCTION pathlock.within(p text, prefix text) RETURNS boolean LANGUAGE sql IMMUTABLE AS
$$ SELECT prefix = '/' OR p = prefix OR starts_with(p, prefix || '/') $$;
CREATE OR REPLACE FUNCTION pathlock.channel(p_ns text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT 'pathlock_' || md5(p_ns) $$;
-- Wakes the waiters of p_ns: the payload is the removed paths, joined by
-- newlines (empty, "look again", when too long for a notification).
CREATE OR REPLACE FUNCTION pathlock.wake(p_ns text, p_paths text[]) RETURNS void LANGUAGE sql AS $$
  SELECT pg_notify(pathlock.channel(p_ns),
                   CASE WHEN octet_length(array_to_string(p_paths, E'\n')) < 7900
                        THEN array_to_string(p_paths, E'\n') ELSE '' END) $$;
CREATE OR REPLACE FUNCTION pathlock.serialise(p_ns text) RETURNS void LANGUAGE sql AS
$$ SELECT pg_advisory_xact_lock(hashtextextended('pathlock:' || p_ns, 0)) $$;
-- Removes the locks whose lease ended and the places whose reservation
-- ended, and wakes their waiters.
CREATE OR REPLACE FUNCTION pathlock.reap(p_ns text, p_now bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE v text[];
BEGIN
  FOR v IN DELETE FROM pathlock.locks l WHERE l.ns = p_ns AND l.expires <= p_now RETURNING l.paths LOOP
    PERFORM pathlock.wake(p_ns, v);
  END LOOP;
  FOR v IN DELETE FROM pathlock.waiters w WHERE w.ns = p_ns AND w.expires <= p_now RETURNING w.paths LOOP
    PERFORM pathlock.wake(p_ns, v);
  END LOOP;
END $$;

-- The rows of a request's targets as pathlock.held and pathlock.queued
-- store them.
CREATE OR REPLACE FUNCTION pathlock.targets(p_codes int[], p_roles text[], p_paths text[])
RETURNS TABLE (code int, sk text, k text, role text, path text) LANGUAGE sql IMMUTABLE AS $$
  SELECT p_codes[j], pathlock.sk(p_paths[j]), pathlock.k(pathlock.sk(p_paths[j])), p_roles[j], p_paths[j]
    FROM generate_subscripts(p_paths, 1) j $$;

-- The held target that refuses code masks (m_same, m_anc, m_desc) of a
-- request of matrix p_fp at p_path, by the witness rule
-- (docs/lua-protocol.md#the-conflicting-lock); a target of another matrix
-- refuses every overlap. p_others: the other matrices present.
CREATE OR REPLACE FUNCTION pathlock.held_conflict(p_ns text, p_fp text, p_path text, m_same bigint, m_anc bigint,
    m_desc bigint, p_others text[], OUT h_id text, OUT h_code int, OUT h_role text, OUT h_path text, OUT rel int)
LANGUAGE plpgsql STABLE AS $$
DECLARE v_lo text COLLATE "C" := pathlock.lo(p_path); v_hi text COLLATE "C" := pathlock.hi(p_path);
BEGIN
  SELECT h.id, h.code, h.role, h.path, 1 INTO h_id, h_code, h_role, h_path, rel FROM pathlock.held h
   WHERE h.ns = p_ns AND h.k = ANY (pathlock.ks(pathlock.above(p_path))) AND h.sk = ANY (pathlock.above(p_path))
     AND (h.fp <> p_fp OR (m_anc >> h.code) & 1 = 1)
   ORDER BY length(h.sk), h.fp <> p_fp, h.fp, h.code, h.fence DESC LIMIT 1;
  IF FOUND THEN RETURN; END IF;
  SELECT h.id, h.code, h.role, h.path, 0 INTO h_id, h_code, h_role, h_path, rel FROM pathlock.held h
   WHERE h.ns = p_ns AND h.k = pathlock.k(pathlock.sk(p_path)) AND h.sk = pathlock.sk(p_path)
     AND (h.fp <> p_fp OR (m_same >> h.code) & 1 = 1)
   ORDER BY h.fp <> p_fp, h.fp, h.code, h.fence DESC LIMIT 1;
  IF FOUND THEN RETURN; END IF;
  SELECT x.id, x.code, x.role, x.path, 2 INTO h_id, h_code, h_role, h_path, rel
    FROM (SELECT p_fp AS f, c FROM unnest(pathlock.bits(m_desc)) c
          UNION ALL SELECT o, c FROM unnest(p_others) o, generate_series(0, 63) c) kc
    CROSS JOIN LATERAL (SELECT h.* FROM pathlock.held h
                         WHERE h.ns = p_ns AND h.fp = kc.f AND h.code = kc.c AND h.k >= pathlock.k(v_lo)
                           AND h.k <= pathlock.k(v_hi) AND h.sk > v_lo AND h.sk < v_hi
                         ORDER BY h.k, h.sk, h.fence DESC LIMIT 1) x
   ORDER BY x.sk, x.fp <> p_fp, x.fp, x.code, x.fence DESC LIMIT 1;
END $$;

-- The oldest place in line (older than p_place when set) that refuses the
-- request's target at p_path as if it held its lock.
CREATE OR REPLACE FUNCTION pathlock.waiter_conflict(p_ns text, p_fp text, p_path text, m_same bigint, m_anc bigint,
    m_desc bigint, p_place bigint, p_now bigint,
    OUT w_id text, OUT w_code int, OUT w_role text, OUT w_path text, OUT rel int)
LANGUAGE sql STABLE AS $$
  SELECT q.id, q.code, q.role, q.path, x.rel
    FROM pathlock.queued q
    JOIN pathlock.waiters w ON w.ns = q.ns AND w.id = q.id
    CROSS JOIN LATERAL (SELECT CASE WHEN q.sk = pathlock.sk(p_path) THEN 0
                                    WHEN q.sk = ANY (pathlock.above(p_path)) THEN 1 ELSE 2 END AS rel) x
   WHERE q.ns = p_ns AND w.expires > p_now AND (p_place IS NULL OR q.place < p_place)
     AND ((q.k = ANY (pathlock.ks(pathlock.above(p_path))) AND q.sk = ANY (pathlock.above(p_path)))
          OR (q.k = pathlock.k(pathlock.sk(p_path)) AND q.sk = pathlock.sk(p_path))
          OR (q.k >= pathlock.k(pathlock.lo(p_path)) AND q.k <= pathlock.k(pathlock.hi(p_path))
              AND q.sk > pathlock.lo(p_path) AND q.sk < pathlock.hi(p_path)))
     AND (q.fp <> p_fp OR ((CASE x.rel WHEN 0 THEN m_same WHEN 1 THEN m_anc ELSE m_desc END) >> q.code) & 1 = 1)
   ORDER BY q.place, q.code LIMIT 1 $$;

-- The other matrices with a lock or a place in line in p_ns. A loose
-- index scan over held_code: one probe per matrix present.
CREATE OR REPLACE FUNCTION pathlock.other_matrices(p_ns text, p_fp text) RETURNS text[] LANGUAGE sql STABLE AS $$
  WITH RECURSIVE f(fp) AS (
    (SELECT h.fp FROM pathlock.held h WHERE h.ns = p_ns ORDER BY h.fp LIMIT 1)
    UNION ALL
    SELECT (SELECT h.fp FROM pathlock.held h WHERE h.ns = p_ns AND h.fp > f.fp ORDER BY h.fp LIMIT 1)
      FROM f WHERE f.fp IS NOT NULL)
  SELECT coalesce(array_agg(fp), '{}') FROM f WHERE fp IS NOT NULL AND fp <> p_fp $$;
-- The same, cheap in the usual case: two index probes say whether any
-- other matrix is present at all.
CREATE OR REPLACE FUNCTION pathlock.others_present(p_ns text, p_fp text) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT (SELECT h.fp FROM pathlock.held h WHERE h.ns = p_ns AND h.fp < p_fp ORDER BY h.fp DESC LIMIT 1) IS NOT NULL
      OR (SELECT h.fp FROM pathlock.held h WHERE h.ns = p_ns AND h.fp > p_fp ORDER BY h.fp LIMIT 1) IS NOT NULL $$;

-- The place in line of waiter p_waiter (NULL: none, or its reservation
-- ended); a place of another request under that id is bad input.
CREATE OR REPLACE FUNCTION pathlock.my_place(p_ns text, p_waiter text, p_owner text, p_fp text, p_op text,
    p_paths text[], p_now bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_me pathlock.waiters;
BEGIN
  IF p_waiter = '' THEN RETURN NULL; END IF;
  SELECT * INTO v_me FROM pathlock.waiters w WHERE w.ns = p_ns AND w.id = p_waiter;
  IF NOT FOUND THEN RETURN NULL; END IF;
  IF v_me.owner <> p_owner OR v_me.fp <> p_fp OR v_me.op <> p_op OR v_me.paths <> p_paths THEN
    RAISE EXCEPTION 'waiter_id % is in use by another request', p_waiter USING ERRCODE = '22023';
  END IF;
  RETURN CASE WHEN v_me.expires > p_now THEN v_me.place END;
END $$;

-- A lock the request already holds: its reentry (p_reenter_id, one more
-- hold) or the grant of its idempotency key (p_key, lease extended). NULL
-- when there is none (for a reentry: the caller is not the holder).
CREATE OR REPLACE FUNCTION pathlock.held_again(p_ns text, p_fp text, p_owner text, p_op text, p_paths text[],
    p_ttl bigint, p_reenter_id text, p_reenter_token text, p_key text, p_now bigint)
RETURNS pathlock.locks LANGUAGE plpgsql AS $$
DECLARE v_lock pathlock.locks;
BEGIN
  IF p_reenter_id <> '' THEN
    SELECT * INTO v_lock FROM pathlock.locks l WHERE l.ns = p_ns AND l.id = p_reenter_id;
    IF NOT FOUND OR v_lock.token <> p_reenter_token THEN RETURN NULL; END IF;
    IF v_lock.fp <> p_fp OR v_lock.op <> p_op OR v_lock.paths <> p_paths THEN
      RAISE EXCEPTION 'reentry of lock %: the request must repeat its operation ''%'' and its targets',
        v_lock.id, v_lock.op USING ERRCODE = '22023';
    END IF;
    UPDATE pathlock.locks l SET holds = l.holds + 1, ttl = p_ttl, expires = greatest(l.expires, p_now + p_ttl)
     WHERE l.ns = p_ns AND l.id = p_reenter_id RETURNING * INTO v_lock;
  ELSIF p_key <> '' THEN
    SELECT * INTO v_lock FROM pathlock.locks l WHERE l.ns = p_ns AND l.idem = p_key;
    IF NOT FOUND THEN RETURN NULL; END IF;
    IF v_lock.owner <> p_owner OR v_lock.fp <> p_fp OR v_lock.op <> p_op OR v_lock.paths <> p_paths THEN
      RAISE EXCEPTION 'idempotency_key is in use by another request (another owner, operation or targets)'
        USING ERRCODE = '22023';
    END IF;
    UPDATE pathlock.locks l SET expires = greatest(l.expires, p_now + p_ttl)
     WHERE l.ns = p_ns AND l.id = v_lock.id RETURNING * INTO v_lock;
  END IF;
  RETURN v_lock;
END $$;

-- What refuses a request's target at p_path: a held lock (p_queued false,
-- pathlock.held_conflict) or an older place in line (pathlock.waiter_conflict),
-- with the holder's operation, owner and lease end. NULL x_id: nothing.
CREATE OR REPLACE FUNCTION pathlock.target_conflict(p_queued boolean, p_ns text, p_fp text, p_path text,
    m_same bigint, m_anc bigint, m_desc bigint, p_others text[], p_place bigint, p_now bigint,
    OUT x_id text, OUT x_role text, OUT x_path text, OUT rel int, OUT x_op text, OUT x_owner text, OUT x_end bigint)
LANGUAGE plpgsql AS $$
DECLARE v_code int;
BEGIN
  IF NOT p_queued THEN
    SELECT * INTO x_id, v_code, x_role, x_path, rel
      FROM pathlock.held_conflict(p_ns, p_fp, p_path, m_same, m_anc, m_desc, p_others);
    IF x_id IS NOT NULL THEN
      SELECT l.op, l.owner, l.expires INTO x_op, x_owner, x_end FROM pathlock.locks l WHERE l.ns = p_ns AND l.id = x_id;
    END IF;
  ELSE
    SELECT * INTO x_id, v_code, x_role, x_path, rel
      FROM pathlock.waiter_conflict(p_ns, p_fp, p_path, m_same, m_anc, m_desc, p_place, p_now);
    IF x_id IS NOT NULL THEN
      SELECT w.op, w.owner, w.expires INTO x_op, x_owner, x_end FROM pathlock.waiters w WHERE w.ns = p_ns AND w.id = x_id;
    END IF;
  END IF;
END $$;

-- The first conflict of a request, target by target: a held lock (by the
-- witness rule), else, for a fair request, an older place in line. NULL
-- c_id: none. c_index is the request's target it hit (1-based).
CREATE OR REPLACE FUNCTION pathlock.first_conflict(p_ns text, p_fp text, p_paths text[], p_masks bigint[],
    p_fair boolean, p_place bigint, p_now bigint,
    OUT c_id text, OUT c_op text, OUT c_role text, OUT c_path text, OUT c_owner text, OUT c_expires_in bigint,
    OUT c_index int, OUT c_relation int, OUT c_queued boolean)
LANGUAGE plpgsql AS $$
DECLARE v_others text[]; k int; v_queued boolean;
BEGIN
  v_others := CASE WHEN pathlock.others_present(p_ns, p_fp) THEN pathlock.other_matrices(p_ns, p_fp) ELSE '{}' END;
  FOREACH v_queued IN ARRAY ARRAY[false, true] LOOP
    IF v_queued AND (NOT p_fair OR NOT EXISTS (SELECT 1 FROM pathlock.waiters w
                                                WHERE w.ns = p_ns AND w.expires > p_now)) THEN
      RETURN;
    END IF;
    FOR k IN 1 .. array_length(p_paths, 1) LOOP
      SELECT x.x_id, x.x_op, x.x_role, x.x_path, x.x_owner, x.x_end - p_now, k, x.rel, v_queued
        INTO c_id, c_op, c_role, c_path, c_owner, c_expires_in, c_index, c_relation, c_queued
        FROM pathlock.target_conflict(v_queued, p_ns, p_fp, p_paths[k], p_masks[3 * k - 2], p_masks[3 * k - 1],
                                      p_masks[3 * k], v_others, p_place, p_now) x;
      IF c_id IS NOT NULL THEN RETURN; END IF;
    END LOOP;
  END LOOP;
END $$;

-- A new lock and its targets; replies its fence: one more than the last,
-- and at least the server clock in microseconds (never back, even after a
-- restore).
CREATE OR REPLACE FUNCTION pathlock.new_lock(p_ns text, p_fp text, p_owner text, p_op text, p_roles text[],
    p_codes int[], p_paths text[], p_ttl bigint, p_id text, p_token text, p_key text, p_now bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_fence bigint;
BEGIN
  INSERT INTO pathlock.namespaces AS n (ns, fence) VALUES (p_ns, pathlock.now_us())
    ON CONFLICT (ns) DO UPDATE SET fence = greatest(n.fence + 1, pathlock.now_us()) RETURNING n.fence INTO v_fence;
  INSERT INTO pathlock.locks (ns, id, token, owner, fp, op, roles, paths, fence, holds, ttl, expires, idem)
    VALUES (p_ns, p_id, p_token, p_owner, p_fp, p_op, p_roles, p_paths, v_fence, 1, p_ttl, p_now + p_ttl,
            nullif(p_key, ''));
  INSERT INTO pathlock.held (ns, id, code, sk, k, fp, role, path, fence)
    SELECT p_ns, p_id, t.code, t.sk, t.k, p_fp, t.role, t.path, v_fence FROM pathlock.targets(p_codes, p_roles, p_paths) t;
  RETURN v_fence;
END $$;

-- acquire: one call per attempt (docs/postgres.md#functions). p_masks holds,
-- per target k, the refusal masks of its code for the relations same,
-- held_ancestor and held_descendant at 3k-2, 3k-1, 3k (bit c: held code c
-- of the same matrix refuses). Replies one row: status 'granted' (id,
-- token, fence, expires_in, holds), 'refused' (the conflict's fields,
-- c_index the request's target it hit, 1-based) or 'not_holder'. Bad input
-- found here raises SQLSTATE 22023 and changes nothing. A grant commits
-- with the server's synchronous_commit (durable by default); a refusal
-- changes only places in line and reaped leases, so it commits without
-- waiting for its WAL flush. Plans are generic: the statements are the same
-- every call, only their parameters change.
CREATE OR REPLACE FUNCTION pathlock.acquire(
    p_ns text, p_fp text, p_owner text, p_op text, p_roles text[], p_codes int[], p_masks bigint[], p_paths text[],
    p_ttl bigint, p_new_id text, p_new_token text, p_reenter_id text, p_reenter_token text, p_key text,
    p_fair boolean, p_waiter text, p_reserve bigint,
    OUT status text, OUT id text, OUT token text, OUT fence bigint, OUT expires_in bigint, OUT holds int,
    OUT c_id text, OUT c_op text, OUT c_role text, OUT c_path text, OUT c_owner text, OUT c_expires_in bigint,
    OUT c_index int, OUT c_relation int, OUT c_queued boolean)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE v_now bigint; v_place bigint; v_lock pathlock.locks;
BEGIN
  PERFORM pathlock.serialise(p_ns);
  v_now := pathlock.now_ms();
  v_place := pathlock.my_place(p_ns, p_waiter, p_owner, p_fp, p_op, p_paths, v_now);
  PERFORM pathlock.reap(p_ns, v_now);
  v_lock := pathlock.held_again(p_ns, p_fp, p_owner, p_op, p_paths, p_ttl, p_reenter_id, p_reenter_token, p_key,
                                v_now);
  IF p_reenter_id <> '' AND v_lock.id IS NULL THEN status := 'not_holder'; RETURN; END IF;
  IF v_lock.id IS NOT NULL THEN
    IF v_place IS NOT NULL THEN PERFORM pathlock.leave(p_ns, p_waiter); END IF;
    SELECT 'granted', v_lock.id, v_lock.token, v_lock.fence, v_lock.expires - v_now, v_lock.holds
      INTO status, id, token, fence, expires_in, holds;
    RETURN;
  END IF;
  SELECT * INTO c_id, c_op, c_role, c_path, c_owner, c_expires_in, c_index, c_relation, c_queued
    FROM pathlock.first_conflict(p_ns, p_fp, p_paths, p_masks, p_fair, v_place, v_now);
  IF c_id IS NOT NULL THEN
    status := 'refused';
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM pathlock.keep_place(p_ns, p_fp, p_owner, p_op, p_roles, p_codes, p_paths, p_waiter, p_reserve,
                                v_place, v_now);
    RETURN;
  END IF;
  fence := pathlock.new_lock(p_ns, p_fp, p_owner, p_op, p_roles, p_codes, p_paths, p_ttl, p_new_id, p_new_token,
                             p_key, v_now);
  IF v_place IS NOT NULL THEN PERFORM pathlock.leave(p_ns, p_waiter); END IF;
  SELECT 'granted', p_new_id, p_new_token, p_ttl, 1 INTO status, id, token, expires_in, holds;
END $$;

-- A refused attempt: keeps (or takes, at the back of the line) the place
-- p_waiter for p_reserve ms (at most 2000), or, on the last attempt
-- (p_reserve = 0), gives it up.
CREATE OR REPLACE FUNCTION pathlock.keep_place(p_ns text, p_fp text, p_owner text, p_op text, p_roles text[],
    p_codes int[], p_paths text[], p_waiter text, p_reserve bigint, p_place bigint, p_now bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE v_place bigint;
BEGIN
  IF p_waiter = '' THEN RETURN; END IF;
  IF p_reserve <= 0 THEN
    IF p_place IS NOT NULL THEN PERFORM pathlock.leave(p_ns, p_waiter); END IF;
  ELSIF p_place IS NOT NULL THEN
    UPDATE pathlock.waiters w SET expires = p_now + least(p_reserve, 2000) WHERE w.ns = p_ns AND w.id = p_waiter;
  ELSE
    INSERT INTO pathlock.namespaces AS n (ns, place) VALUES (p_ns, 1)
      ON CONFLICT (ns) DO UPDATE SET place = n.place + 1 RETURNING n.place INTO v_place;
    INSERT INTO pathlock.waiters (ns, id, owner, fp, op, roles, paths, place, since, expires)
      VALUES (p_ns, p_waiter, p_owner, p_fp, p_op, p_roles, p_paths, v_place, p_now,
              p_now + least(p_reserve, 2000));
    INSERT INTO pathlock.queued (ns, id, code, sk, k, fp, role, path, place)
      SELECT p_ns, p_waiter, t.code, t.sk, t.k, p_fp, t.role, t.path, v_place
        FROM pathlock.targets(p_codes, p_roles, p_paths) t;
  END IF;
END $$;

-- Takes place p_id out of the line; true when there was one.
CREATE OR REPLACE FUNCTION pathlock.leave(p_ns text, p_id text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE v text[];
BEGIN
  PERFORM pathlock.serialise(p_ns);
  DELETE FROM pathlock.waiters w WHERE w.ns = p_ns AND w.id = p_id RETURNING w.paths INTO v;
  IF NOT FOUND THEN RETURN false; END IF;
  PERFORM pathlock.wake(p_ns, v);
  RETURN true;
END $$;

-- Drops one hold of lock p_id (p_token NULL: every hold, force_release).
-- Replies the holds left, or NULL when no live lock has this id and token.
-- Commits without waiting for its WAL flush: a release lost by a crash of
-- the server leaves the lock held until its lease ends (what a client that
-- died would leave), and the next durable commit (a grant) flushes it.
CREATE OR REPLACE FUNCTION pathlock.release(p_ns text, p_id text, p_token text) RETURNS int
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE v pathlock.locks;
BEGIN
  PERFORM pathlock.serialise(p_ns);
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM pathlock.reap(p_ns, pathlock.now_ms());
  SELECT * INTO v FROM pathlock.locks l WHERE l.ns = p_ns AND l.id = p_id;
  IF NOT FOUND OR (p_token IS NOT NULL AND v.token <> p_token) THEN RETURN NULL; END IF;
  IF p_token IS NOT NULL AND v.holds > 1 THEN
    UPDATE pathlock.locks l SET holds = l.holds - 1 WHERE l.ns = p_ns AND l.id = p_id;
    RETURN v.holds - 1;
  END IF;
  DELETE FROM pathlock.locks l WHERE l.ns = p_ns AND l.id = p_id;
  PERFORM pathlock.wake(p_ns, v.paths);
  RETURN 0;
END $$;

-- Extends lock p_id's lease to now + ttl (p_ttl NULL: its own TTL; a given
-- one becomes its TTL). Replies the lease left, or NULL (no such lock).
-- Durable like a grant: a renewal lost by a crash would end the lease
-- before the time its holder was told.
CREATE OR REPLACE FUNCTION pathlock.renew(p_ns text, p_id text, p_token text, p_ttl bigint) RETURNS bigint
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE v_now bigint; v_left bigint;
BEGIN
  PERFORM pathlock.serialise(p_ns);
  v_now := pathlock.now_ms();
  PERFORM pathlock.reap(p_ns, v_now);
  UPDATE pathlock.locks l SET ttl = coalesce(p_ttl, l.ttl), expires = v_now + coalesce(p_ttl, l.ttl)
   WHERE l.ns = p_ns AND l.id = p_id AND l.token = p_token RETURNING l.expires - v_now INTO v_left;
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

-- The version of the functions above: an engine that finds an older one
-- runs this script again (every statement in it can be repeated).
CREATE OR REPLACE FUNCTION pathlock.functions_version() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 2 $$;

INSERT INTO pathlock.meta (layout) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM pathlock.meta);

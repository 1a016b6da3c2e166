-- The pathlock schema in PostgreSQL, layout 1 (docs/postgres.md): tables,
-- indexes and small helpers; functions.sql, run after it, holds the calls.
-- Run once per database by the first engine that finds no schema (under an
-- advisory lock, so engines starting together do not race), or by an
-- administrator.
-- Every write function runs as one transaction, and an acquire first locks
-- its paths (pathlock.lock_paths in functions.sql: transaction-scoped
-- advisory locks, exclusive on the paths, shared on their ancestors), so
-- its check and write are one atomic step for every request that overlaps
-- it, never a check followed by an insert an overlapping caller can
-- interleave with.
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
-- An owner's live locks in a namespace, counted for the limit on them
-- (owner_locks, functions version 9): one range of this index.
CREATE INDEX IF NOT EXISTS locks_owner ON pathlock.locks (ns, owner, expires);
-- Ended leases of every namespace, oldest first (pathlock.sweep, functions
-- version 5): a namespace nobody calls any more is cleaned by others' calls.
CREATE INDEX IF NOT EXISTS locks_ended ON pathlock.locks (expires);
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
CREATE INDEX IF NOT EXISTS waiters_ended ON pathlock.waiters (expires);
CREATE TABLE IF NOT EXISTS pathlock.queued (
  ns text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, code int NOT NULL,
  sk text COLLATE "C" NOT NULL, k text COLLATE "C" NOT NULL,
  fp text NOT NULL, role text NOT NULL, path text NOT NULL, place bigint NOT NULL,
  PRIMARY KEY (ns, id, code),
  FOREIGN KEY (ns, id) REFERENCES pathlock.waiters (ns, id) ON DELETE CASCADE);
CREATE INDEX IF NOT EXISTS queued_path ON pathlock.queued (ns, k);
-- Conversion (functions version 10, docs/design.md#conversion): the lock a
-- waiting conversion converts (NULL: a place of an acquire), and the key
-- of the conversion that made a lock what it is (NULL: none).
ALTER TABLE pathlock.waiters ADD COLUMN IF NOT EXISTS converts text COLLATE "C";
ALTER TABLE pathlock.locks ADD COLUMN IF NOT EXISTS convert_key text COLLATE "C";
-- The sessions LISTENing for a namespace's wake-ups (engines' listeners,
-- functions version 4): a removal notifies only when there is one.
CREATE TABLE IF NOT EXISTS pathlock.watchers (
  ns text COLLATE "C" NOT NULL, pid int NOT NULL,
  PRIMARY KEY (ns, pid));
-- Limits per namespace (functions version 9, docs/postgres.md#limits-per-namespace):
-- a namespace's own limits in its row, the default of every namespace
-- without a row in the row '*' (no namespace has that name: namespaces are
-- [A-Za-z0-9._:-]). A NULL column is no limit, so a row whose three columns
-- are NULL gives its namespace no limits whatever the default. Operators'
-- settings: no sweep or cleanup removes a row. A database that had the
-- tables of an older version gets this one with the rights the roles have
-- on pathlock.locks, so that services granted the tables before can still
-- read it (every grant reads it) and set limits if they could write locks.
DO $$
DECLARE g record;
BEGIN
  IF to_regclass('pathlock.limits') IS NULL THEN
    CREATE TABLE pathlock.limits (
      ns text COLLATE "C" PRIMARY KEY,
      locks bigint CHECK (locks BETWEEN 0 AND 1000000000),  -- kMaxLimit
      places bigint CHECK (places BETWEEN 0 AND 1000000000),
      owner_locks bigint CHECK (owner_locks BETWEEN 0 AND 1000000000));
    FOR g IN SELECT a.grantee, a.privilege_type FROM pg_class c, aclexplode(c.relacl) a
              WHERE c.oid = 'pathlock.locks'::regclass AND a.grantee <> c.relowner LOOP
      EXECUTE format('GRANT %s ON pathlock.limits TO %s', g.privilege_type,
                     CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END);
    END LOOP;
  END IF;
END $$;

CREATE OR REPLACE FUNCTION pathlock.now_us() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint $$;
CREATE OR REPLACE FUNCTION pathlock.now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT pathlock.now_us() / 1000 $$;
CREATE OR REPLACE FUNCTION pathlock.sk(p text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT translate(p, '/', chr(1)) COLLATE "C" $$;
-- The index key of sort key s.
CREATE OR REPLACE FUNCTION pathlock.k(s text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT left(s, 500) COLLATE "C" $$;
-- SQL-language helpers below are either inlined where they are used (one
-- SELECT of an expression, no FROM) or written in PL/pgSQL: a SQL function
-- that cannot be inlined is planned again at each call's first use in a
-- transaction, where PL/pgSQL keeps its plans for the session.
CREATE OR REPLACE FUNCTION pathlock.ks(a text[]) RETURNS text[] LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE r text[] := '{}'; x text;
BEGIN
  FOREACH x IN ARRAY a LOOP r := r || pathlock.k(x); END LOOP;
  RETURN r;
END $$;
-- The sort keys of the strict ancestors of p, root first.
CREATE OR REPLACE FUNCTION pathlock.above(p text) RETURNS text[] LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE r text[] := ARRAY[chr(1)]; i int := 1; n int;
BEGIN
  IF p = '/' THEN RETURN '{}'; END IF;
  LOOP
    n := strpos(substr(p, i + 1), '/');
    EXIT WHEN n = 0;
    i := i + n;
    r := r || pathlock.sk(left(p, i - 1));
  END LOOP;
  RETURN r;
END $$;
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
CREATE OR REPLACE FUNCTION pathlock.watch_key(p_ns text) RETURNS bigint LANGUAGE sql IMMUTABLE AS
$$ SELECT hashtextextended('pathlock-watch:' || p_ns, 0) $$;
-- Wakes the waiters of p_ns: the payload is the removed paths, joined by
-- newlines (empty, "look again", when too long for a notification). Only
-- when a session listens for the namespace (pathlock.watchers): pg_notify
-- queues at commit under one database-wide lock, which every notifying
-- commit waits for. The shared lock of the namespace's watch key, held to
-- commit, orders this look against pathlock.watch (docs/postgres.md#concurrency).
CREATE OR REPLACE FUNCTION pathlock.wake(p_ns text, p_paths text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(pathlock.watch_key(p_ns));
  IF EXISTS (SELECT 1 FROM pathlock.watchers w WHERE w.ns = p_ns) THEN
    PERFORM pg_notify(pathlock.channel(p_ns),
                      CASE WHEN octet_length(array_to_string(p_paths, E'\n')) < 7900
                           THEN array_to_string(p_paths, E'\n') ELSE '' END);
  END IF;
END $$;
-- A listener's session watches namespace p_ns (then LISTENs on the channel
-- it replies): its row is committed once every removal that did not see it
-- has committed (the watch key, exclusive), so a waiter that looks again
-- after its LISTEN either sees such a removal or is notified of it. Rows of
-- sessions that ended are dropped here. Watch and unwatch commit without
-- waiting for their WAL flush (functions version 6): the row is visible at
-- commit all the same, and a server crash ends the session it names.
CREATE OR REPLACE FUNCTION pathlock.watch(p_ns text) RETURNS text LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off AS $$  -- as the calls of functions.sql (version 8)
DECLARE v_sync text := set_config('synchronous_commit', 'off', true);  -- a crash ends the session: nothing to keep
BEGIN
  PERFORM pg_advisory_xact_lock(pathlock.watch_key(p_ns));
  INSERT INTO pathlock.watchers (ns, pid) VALUES (p_ns, pg_backend_pid()) ON CONFLICT DO NOTHING;
  DELETE FROM pathlock.watchers w
   WHERE w.ns = p_ns AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = w.pid);
  RETURN pathlock.channel(p_ns);
END $$;
CREATE OR REPLACE FUNCTION pathlock.unwatch(p_ns text) RETURNS void LANGUAGE sql
SET enable_seqscan = off SET enable_bitmapscan = off AS
$$ SELECT set_config('synchronous_commit', 'off', true);
   DELETE FROM pathlock.watchers w WHERE w.ns = p_ns AND w.pid = pg_backend_pid() $$;
-- The namespace-wide lock of functions version 3 (kept for scripts; no call
-- of version 4 takes it).
CREATE OR REPLACE FUNCTION pathlock.serialise(p_ns text) RETURNS void LANGUAGE sql AS
$$ SELECT pg_advisory_xact_lock(hashtextextended('pathlock:' || p_ns, 0)) $$;
-- Removes the locks whose lease ended and the places whose reservation
-- ended, and wakes their waiters. One probe of each expiry index first:
-- deleting nothing costs more than looking.
CREATE OR REPLACE FUNCTION pathlock.reap(p_ns text, p_now bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE v text[];
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pathlock.locks l WHERE l.ns = p_ns AND l.expires <= p_now)
     AND NOT EXISTS (SELECT 1 FROM pathlock.waiters w WHERE w.ns = p_ns AND w.expires <= p_now) THEN
    RETURN;
  END IF;
  FOR v IN WITH l AS (DELETE FROM pathlock.locks l
                      WHERE l.ns = p_ns AND l.id IN (SELECT x.id FROM pathlock.locks x
                                                      WHERE x.ns = p_ns AND x.expires <= p_now FOR UPDATE SKIP LOCKED)
                      RETURNING l.paths),
                w AS (DELETE FROM pathlock.waiters w
                      WHERE w.ns = p_ns AND w.id IN (SELECT x.id FROM pathlock.waiters x
                                                      WHERE x.ns = p_ns AND x.expires <= p_now FOR UPDATE SKIP LOCKED)
                      RETURNING w.paths)
           SELECT paths FROM l UNION ALL SELECT paths FROM w LOOP
    PERFORM pathlock.wake(p_ns, v);
  END LOOP;
END $$;

-- The rows of a request's targets as pathlock.held and pathlock.queued
-- store them.
CREATE OR REPLACE FUNCTION pathlock.targets(p_codes int[], p_roles text[], p_paths text[])
RETURNS TABLE (code int, sk text, k text, role text, path text) LANGUAGE sql IMMUTABLE AS $$
  SELECT p_codes[j], pathlock.sk(p_paths[j]), pathlock.k(pathlock.sk(p_paths[j])), p_roles[j], p_paths[j]
    FROM generate_subscripts(p_paths, 1) j $$;

INSERT INTO pathlock.meta (layout) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM pathlock.meta);

-- nq schema version 1: jobs, units, assignments, clients, meta. See docs/store.md.
-- Applied by srv_store_open() in one transaction; the version row is written by the store.
-- Counts are INTEGER (per-unit values fit in 0..2^63-1); job totals that may exceed 64 bits are
-- TEXT decimals. Times are Unix seconds.

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE jobs (
  id          INTEGER PRIMARY KEY,
  n           INTEGER NOT NULL UNIQUE CHECK (n BETWEEN 4 AND 32),
  depth       INTEGER NOT NULL CHECK (depth >= 2),
  quorum      INTEGER NOT NULL CHECK (quorum >= 1),
  max_results INTEGER NOT NULL CHECK (max_results >= quorum),
  state       TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done')),
  created     INTEGER NOT NULL,
  finished    INTEGER NOT NULL DEFAULT 0,
  units       INTEGER NOT NULL DEFAULT 0,
  -- Final totals, written when the last unit is verified (TEXT: 128-bit decimals).
  c2          TEXT,
  c4          TEXT,
  c8          TEXT,
  nodes       TEXT,
  total       TEXT,
  uniq        TEXT
);

CREATE TABLE clients (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  token_hash TEXT NOT NULL UNIQUE,
  created    INTEGER NOT NULL,
  last_seen  INTEGER NOT NULL DEFAULT 0,
  valid      INTEGER NOT NULL DEFAULT 0,
  invalid    INTEGER NOT NULL DEFAULT 0,
  banned     INTEGER NOT NULL DEFAULT 0 CHECK (banned IN (0, 1))
);

-- live, results, best and need are maintained by the scheduler so that finding work is an index
-- range scan: need = max(0, min(quorum - best, max_results - results) - live) while the unit is
-- open, 0 once it is verified or disputed.
CREATE TABLE units (
  id          INTEGER PRIMARY KEY,
  job_id      INTEGER NOT NULL REFERENCES jobs(id),
  idx         INTEGER NOT NULL,
  text        TEXT NOT NULL,
  part        TEXT NOT NULL CHECK (part IN ('c', 's')),
  bound1      INTEGER NOT NULL,
  state       TEXT NOT NULL DEFAULT 'pending'
              CHECK (state IN ('pending', 'leased', 'awaiting', 'verified', 'disputed')),
  live        INTEGER NOT NULL DEFAULT 0,
  results     INTEGER NOT NULL DEFAULT 0,
  best        INTEGER NOT NULL DEFAULT 0,
  need        INTEGER NOT NULL DEFAULT 0,
  c2          INTEGER,
  c4          INTEGER,
  c8          INTEGER,
  nodes       INTEGER,
  verified_at INTEGER,
  UNIQUE (job_id, idx),
  UNIQUE (job_id, text)
);

CREATE TABLE assignments (
  id          INTEGER PRIMARY KEY,
  unit_id     INTEGER NOT NULL REFERENCES units(id),
  client_id   INTEGER NOT NULL REFERENCES clients(id),
  issued      INTEGER NOT NULL,
  deadline    INTEGER NOT NULL,
  state       TEXT NOT NULL DEFAULT 'leased'
              CHECK (state IN ('leased', 'expired', 'reported', 'valid', 'invalid', 'late')),
  late        INTEGER NOT NULL DEFAULT 0,
  c2          INTEGER,
  c4          INTEGER,
  c8          INTEGER,
  nodes       INTEGER,
  seconds     REAL,
  solver      TEXT,
  reported_at INTEGER,
  -- Never two replicas of one unit to one client.
  UNIQUE (unit_id, client_id)
);

-- Scheduler: units being worked on that need another replica, then untouched units, by idx.
CREATE INDEX units_open ON units(job_id, idx)
  WHERE need > 0 AND state IN ('leased', 'awaiting');
CREATE INDEX units_pending ON units(job_id, idx) WHERE state = 'pending';
CREATE INDEX units_state ON units(job_id, state);
-- A client's outstanding leases (resend, cap) and the expiry sweep.
CREATE INDEX assignments_client ON assignments(client_id, state);
CREATE INDEX assignments_leased ON assignments(deadline) WHERE state = 'leased';
-- Recent results rate.
CREATE INDEX assignments_reported ON assignments(reported_at) WHERE reported_at IS NOT NULL;

-- nq schema version 5: record-scale jobs (issue 11). See docs/store.md.
-- (Version 4 is reserved for per-assignment progress; versions may have gaps.)
--
-- jobs: units sized to a target (unit_seconds; 0 for a flat --depth job), mixed depths
--   (min_depth..depth), the plan's exact split ("internal") nodes, its whole estimate, its seed,
--   the id range of its units (first_unit .. first_unit + units - 1), and two more states:
--   'creating' (units still being inserted, batch by batch) and 'archived' (kept for the record;
--   N is free again). N is unique among the jobs that are not archived.
-- units: compact for 30 million rows: no UNIQUE(job_id, text) or (job_id, idx) index (units are
--   inserted in plan order with ids first_unit + idx, so the id is the order and a unit is found
--   by its text with a binary search over the job's id range); est_nodes, the unit's estimated
--   node count (NULL for units made before this version); touched, 1 once the unit was first
--   leased. No index holds the untouched units, so creating a job writes nothing but the table:
--   the scheduler takes them in id order from job_stats.fresh, the lowest id that may still be
--   untouched (every unit below it was leased at least once; a trigger moves it). The partial
--   indexes, keyed by job_id alone (the rowid orders them), hold only units that were touched.
-- job_stats: the status counters, maintained by triggers with every change of a unit's state,
--   results or verified counts, so that status never scans units. Sums that may pass 63 bits
--   are kept as two integers split at 2^32 (hi = sum of v >> 32, lo = sum of v & 0xffffffff),
--   exact as long as a job has fewer than 2^31 units.
-- job_rate: results and their nodes per job and minute (for rates and the ETA).
-- The tables are rebuilt (copy, drop, rename); the store runs every migration with foreign keys
-- off and checks them (PRAGMA foreign_key_check) before it commits.
-- Lists of values are written as OR chains, never as IN (...): SQLite evaluates a CHECK or a
-- partial index's WHERE for every row it writes, and an IN list of three or more constants builds
-- a temporary b-tree each time (measured: an insert into units cost 3x as much). A query meets a
-- partial index only through the same terms, so the scheduler's queries spell them the same way.

CREATE TABLE jobs_new (
  id           INTEGER PRIMARY KEY,
  n            INTEGER NOT NULL CHECK (n BETWEEN 4 AND 32),
  depth        INTEGER NOT NULL CHECK (depth >= 2),
  quorum       INTEGER NOT NULL CHECK (quorum >= 1),
  max_results  INTEGER NOT NULL CHECK (max_results >= quorum),
  state        TEXT NOT NULL DEFAULT 'running'
               CHECK (state = 'creating' OR state = 'running' OR state = 'done'
                      OR state = 'archived'),
  created      INTEGER NOT NULL,
  finished     INTEGER NOT NULL DEFAULT 0,
  units        INTEGER NOT NULL DEFAULT 0,
  c2           TEXT,
  c4           TEXT,
  c8           TEXT,
  nodes        TEXT,
  total        TEXT,
  uniq         TEXT,
  min_depth    INTEGER NOT NULL DEFAULT 0,
  unit_seconds REAL NOT NULL DEFAULT 0,
  seed         INTEGER NOT NULL DEFAULT 0,
  internal     INTEGER,
  est_nodes    REAL,
  est_se       REAL,
  first_unit   INTEGER NOT NULL DEFAULT 0,
  archived     INTEGER NOT NULL DEFAULT 0
);
INSERT INTO jobs_new (id, n, depth, quorum, max_results, state, created, finished, units, c2, c4,
                      c8, nodes, total, uniq, min_depth, first_unit)
  SELECT id, n, depth, quorum, max_results, state, created, finished, units, c2, c4, c8, nodes,
         total, uniq, depth, coalesce((SELECT min(u.id) FROM units u WHERE u.job_id = jobs.id), 0)
  FROM jobs;

CREATE TABLE units_new (
  id            INTEGER PRIMARY KEY,
  job_id        INTEGER NOT NULL REFERENCES jobs(id),
  idx           INTEGER NOT NULL,
  text          TEXT NOT NULL,
  part          TEXT NOT NULL CHECK (part = 'c' OR part = 's'),
  bound1        INTEGER NOT NULL,
  state         TEXT NOT NULL DEFAULT 'pending'
                CHECK (state = 'pending' OR state = 'leased' OR state = 'awaiting'
                       OR state = 'verified' OR state = 'disputed'),
  live          INTEGER NOT NULL DEFAULT 0,
  results       INTEGER NOT NULL DEFAULT 0,
  best          INTEGER NOT NULL DEFAULT 0,
  need          INTEGER NOT NULL DEFAULT 0,
  c2            INTEGER,
  c4            INTEGER,
  c8            INTEGER,
  nodes         INTEGER,
  verified_at   INTEGER,
  extra_results INTEGER NOT NULL DEFAULT 0 CHECK (extra_results >= 0),
  est_nodes     INTEGER,
  touched       INTEGER NOT NULL DEFAULT 0 CHECK (touched = 0 OR touched = 1)
);
INSERT INTO units_new (id, job_id, idx, text, part, bound1, state, live, results, best, need, c2,
                       c4, c8, nodes, verified_at, extra_results, touched)
  SELECT id, job_id, idx, text, part, bound1, state, live, results, best, need, c2, c4, c8, nodes,
         verified_at, extra_results,
         EXISTS (SELECT 1 FROM assignments a WHERE a.unit_id = units.id)
  FROM units ORDER BY id;

DROP TABLE units;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
ALTER TABLE units_new RENAME TO units;

CREATE UNIQUE INDEX jobs_n ON jobs(n) WHERE state != 'archived';
-- Scheduler: units being worked on that need another replica, then untouched units, by id.
CREATE INDEX units_open ON units(job_id)
  WHERE need > 0 AND (state = 'leased' OR state = 'awaiting');
-- Units back to pending after their leases expired (they were touched); untouched ones are taken
-- from job_stats.fresh on.
CREATE INDEX units_returned ON units(job_id) WHERE state = 'pending' AND touched = 1;
-- Listing the few units in flight or in dispute (nq-admin units --state leased|awaiting|disputed).
CREATE INDEX units_active ON units(job_id, state)
  WHERE state = 'leased' OR state = 'awaiting' OR state = 'disputed';

CREATE TABLE job_stats (
  job_id    INTEGER PRIMARY KEY REFERENCES jobs(id),
  pending   INTEGER NOT NULL DEFAULT 0,
  leased    INTEGER NOT NULL DEFAULT 0,
  awaiting  INTEGER NOT NULL DEFAULT 0,
  verified  INTEGER NOT NULL DEFAULT 0,
  disputed  INTEGER NOT NULL DEFAULT 0,
  results   INTEGER NOT NULL DEFAULT 0,
  -- verified units: their counts, nodes and estimates; all units: their estimates
  c2_hi INTEGER NOT NULL DEFAULT 0, c2_lo INTEGER NOT NULL DEFAULT 0,
  c4_hi INTEGER NOT NULL DEFAULT 0, c4_lo INTEGER NOT NULL DEFAULT 0,
  c8_hi INTEGER NOT NULL DEFAULT 0, c8_lo INTEGER NOT NULL DEFAULT 0,
  nodes_hi INTEGER NOT NULL DEFAULT 0, nodes_lo INTEGER NOT NULL DEFAULT 0,
  vest_hi INTEGER NOT NULL DEFAULT 0, vest_lo INTEGER NOT NULL DEFAULT 0,
  est_hi INTEGER NOT NULL DEFAULT 0, est_lo INTEGER NOT NULL DEFAULT 0,
  est_units INTEGER NOT NULL DEFAULT 0,
  fresh     INTEGER NOT NULL DEFAULT 0 -- every unit of the job with a lower id was touched
);
INSERT INTO job_stats (job_id, fresh, pending, leased, awaiting, verified, disputed, results)
  SELECT j.id,
    coalesce((SELECT min(u.id) FROM units u WHERE u.job_id = j.id AND u.touched = 0),
             j.first_unit + j.units),
    (SELECT count(*) FROM units u WHERE u.job_id = j.id AND u.state = 'pending'),
    (SELECT count(*) FROM units u WHERE u.job_id = j.id AND u.state = 'leased'),
    (SELECT count(*) FROM units u WHERE u.job_id = j.id AND u.state = 'awaiting'),
    (SELECT count(*) FROM units u WHERE u.job_id = j.id AND u.state = 'verified'),
    (SELECT count(*) FROM units u WHERE u.job_id = j.id AND u.state = 'disputed'),
    (SELECT coalesce(sum(results), 0) FROM units u WHERE u.job_id = j.id)
  FROM jobs j;
UPDATE job_stats SET
  c2_hi = (SELECT coalesce(sum(c2 >> 32), 0) FROM units u WHERE u.job_id = job_stats.job_id
           AND u.state = 'verified'),
  c2_lo = (SELECT coalesce(sum(c2 & 4294967295), 0) FROM units u
           WHERE u.job_id = job_stats.job_id AND u.state = 'verified'),
  c4_hi = (SELECT coalesce(sum(c4 >> 32), 0) FROM units u WHERE u.job_id = job_stats.job_id
           AND u.state = 'verified'),
  c4_lo = (SELECT coalesce(sum(c4 & 4294967295), 0) FROM units u
           WHERE u.job_id = job_stats.job_id AND u.state = 'verified'),
  c8_hi = (SELECT coalesce(sum(c8 >> 32), 0) FROM units u WHERE u.job_id = job_stats.job_id
           AND u.state = 'verified'),
  c8_lo = (SELECT coalesce(sum(c8 & 4294967295), 0) FROM units u
           WHERE u.job_id = job_stats.job_id AND u.state = 'verified'),
  nodes_hi = (SELECT coalesce(sum(nodes >> 32), 0) FROM units u
              WHERE u.job_id = job_stats.job_id AND u.state = 'verified'),
  nodes_lo = (SELECT coalesce(sum(nodes & 4294967295), 0) FROM units u
              WHERE u.job_id = job_stats.job_id AND u.state = 'verified');

-- One trigger keeps every counter: it fires only when a unit's state, results or verified counts
-- really change (the scheduler's refresh rewrites state with the same value most of the time).
CREATE TRIGGER units_stats AFTER UPDATE OF state, results, c2, c4, c8, nodes ON units
WHEN old.state IS NOT new.state OR old.results IS NOT new.results
  OR old.c2 IS NOT new.c2 OR old.c4 IS NOT new.c4 OR old.c8 IS NOT new.c8
  OR old.nodes IS NOT new.nodes
BEGIN
  UPDATE job_stats SET
    pending  = pending  + (new.state = 'pending')  - (old.state = 'pending'),
    leased   = leased   + (new.state = 'leased')   - (old.state = 'leased'),
    awaiting = awaiting + (new.state = 'awaiting') - (old.state = 'awaiting'),
    verified = verified + (new.state = 'verified') - (old.state = 'verified'),
    disputed = disputed + (new.state = 'disputed') - (old.state = 'disputed'),
    results  = results  + new.results - old.results,
    c2_hi = c2_hi + (new.state = 'verified') * (coalesce(new.c2, 0) >> 32)
                  - (old.state = 'verified') * (coalesce(old.c2, 0) >> 32),
    c2_lo = c2_lo + (new.state = 'verified') * (coalesce(new.c2, 0) & 4294967295)
                  - (old.state = 'verified') * (coalesce(old.c2, 0) & 4294967295),
    c4_hi = c4_hi + (new.state = 'verified') * (coalesce(new.c4, 0) >> 32)
                  - (old.state = 'verified') * (coalesce(old.c4, 0) >> 32),
    c4_lo = c4_lo + (new.state = 'verified') * (coalesce(new.c4, 0) & 4294967295)
                  - (old.state = 'verified') * (coalesce(old.c4, 0) & 4294967295),
    c8_hi = c8_hi + (new.state = 'verified') * (coalesce(new.c8, 0) >> 32)
                  - (old.state = 'verified') * (coalesce(old.c8, 0) >> 32),
    c8_lo = c8_lo + (new.state = 'verified') * (coalesce(new.c8, 0) & 4294967295)
                  - (old.state = 'verified') * (coalesce(old.c8, 0) & 4294967295),
    nodes_hi = nodes_hi + (new.state = 'verified') * (coalesce(new.nodes, 0) >> 32)
                        - (old.state = 'verified') * (coalesce(old.nodes, 0) >> 32),
    nodes_lo = nodes_lo + (new.state = 'verified') * (coalesce(new.nodes, 0) & 4294967295)
                        - (old.state = 'verified') * (coalesce(old.nodes, 0) & 4294967295),
    vest_hi = vest_hi + (new.state = 'verified') * (coalesce(new.est_nodes, 0) >> 32)
                      - (old.state = 'verified') * (coalesce(old.est_nodes, 0) >> 32),
    vest_lo = vest_lo + (new.state = 'verified') * (coalesce(new.est_nodes, 0) & 4294967295)
                      - (old.state = 'verified') * (coalesce(old.est_nodes, 0) & 4294967295)
  WHERE job_id = new.job_id;
END;

-- The scheduler leases untouched units in id order, so the first lease of a unit moves the
-- job's fresh cursor past it.
CREATE TRIGGER units_touched AFTER UPDATE OF touched ON units
WHEN old.touched = 0 AND new.touched = 1
BEGIN
  UPDATE job_stats SET fresh = max(fresh, new.id + 1) WHERE job_id = new.job_id;
END;

CREATE TABLE job_rate (
  job_id   INTEGER NOT NULL REFERENCES jobs(id),
  minute   INTEGER NOT NULL, -- reported_at / 60
  results  INTEGER NOT NULL DEFAULT 0,
  nodes_hi INTEGER NOT NULL DEFAULT 0,
  nodes_lo INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, minute)
) WITHOUT ROWID;
INSERT INTO job_rate (job_id, minute, results, nodes_hi, nodes_lo)
  SELECT u.job_id, a.reported_at / 60, count(*), sum(coalesce(a.nodes, 0) >> 32),
         sum(coalesce(a.nodes, 0) & 4294967295)
  FROM assignments a JOIN units u ON u.id = a.unit_id
  WHERE a.reported_at IS NOT NULL GROUP BY u.job_id, a.reported_at / 60;

CREATE TRIGGER assignments_rate AFTER UPDATE OF reported_at ON assignments
WHEN old.reported_at IS NULL AND new.reported_at IS NOT NULL
BEGIN
  INSERT INTO job_rate (job_id, minute, results, nodes_hi, nodes_lo)
    VALUES ((SELECT job_id FROM units WHERE id = new.unit_id), new.reported_at / 60, 1,
            coalesce(new.nodes, 0) >> 32, coalesce(new.nodes, 0) & 4294967295)
    ON CONFLICT (job_id, minute) DO UPDATE SET
      results = results + 1, nodes_hi = nodes_hi + excluded.nodes_hi,
      nodes_lo = nodes_lo + excluded.nodes_lo;
END;

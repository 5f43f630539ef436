-- nq schema version 18: kernel evidence (docs/store.md, "Kernel evidence"; docs/reliability.md,
-- "Liveness").
--
-- assignments.evidence: 1 for a replica leased to a client that has already given the unit a
--   result, so that it computes the unit again with a kernel the unit's agreeing results lack
--   (--diverse-kernels). Such a result is kernel evidence, never a second vote of its key (votes
--   count distinct keys). A client holds at most one assignment of a unit of each kind, hence
--   UNIQUE (unit_id, client_id, evidence), which replaces UNIQUE (unit_id, client_id). 2 marks
--   a client that cannot add a kernel the unit lacks (every other kernel it could run is present
--   or refused): no work, state 'expired', so that it is not asked again and the stall count
--   knows (nq-admin unit retry clears the marks). SQLite
--   cannot change a table's constraint in place, so the table is rebuilt (every row is kept with
--   its id; the indexes and triggers of versions 001-016 are made again as they were).
-- units.kshort: 1 while the unit's best group has the votes (a quorum and a strict majority) but
--   not the kernels its job asks for; such a unit takes kernel evidence from its voters.

CREATE TABLE assignments_new (
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
  progress    REAL CHECK (progress IS NULL OR (progress >= 0 AND progress <= 1)),
  progress_seconds REAL,
  progress_nodes INTEGER,
  progress_at INTEGER,
  net         TEXT,
  spot        INTEGER NOT NULL DEFAULT 0 CHECK (spot = 0 OR spot = 1),
  voided      INTEGER NOT NULL DEFAULT 0 CHECK (voided = 0 OR voided = 1),
  backend     TEXT CHECK (backend IS NULL OR length(backend) <= 128),
  hold_until  INTEGER NOT NULL DEFAULT 0,
  kernel      TEXT CHECK (kernel IS NULL OR length(kernel) < 16),
  evidence    INTEGER NOT NULL DEFAULT 0 CHECK (evidence BETWEEN 0 AND 2),
  -- Never two replicas of one kind of one unit to one client.
  UNIQUE (unit_id, client_id, evidence)
);
INSERT INTO assignments_new (id, unit_id, client_id, issued, deadline, state, late, c2, c4, c8,
  nodes, seconds, solver, reported_at, progress, progress_seconds, progress_nodes, progress_at,
  net, spot, voided, backend, hold_until, kernel, evidence)
  SELECT id, unit_id, client_id, issued, deadline, state, late, c2, c4, c8, nodes, seconds,
         solver, reported_at, progress, progress_seconds, progress_nodes, progress_at, net, spot,
         voided, backend, hold_until, kernel, 0 FROM assignments;
DROP TABLE assignments;
ALTER TABLE assignments_new RENAME TO assignments;

CREATE INDEX assignments_client ON assignments(client_id, state);
CREATE INDEX assignments_leased ON assignments(deadline) WHERE state = 'leased';
CREATE INDEX assignments_reported ON assignments(reported_at) WHERE reported_at IS NOT NULL;
CREATE INDEX assignments_client_reported ON assignments(client_id, id) WHERE seconds IS NOT NULL;
CREATE INDEX assignments_valid ON assignments(client_id) WHERE state = 'valid';

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
CREATE TRIGGER assignments_credit AFTER UPDATE OF state ON assignments
WHEN new.state = 'valid' AND old.state IS NOT 'valid'
BEGIN
  UPDATE clients SET
    credit_hi = credit_hi + (SELECT coalesce(nodes, 0) >> 32 FROM units WHERE id = new.unit_id),
    credit_lo = credit_lo + (SELECT coalesce(nodes, 0) & 4294967295 FROM units WHERE id = new.unit_id)
  WHERE id = new.client_id;
END;
CREATE TRIGGER assignments_uncredit AFTER UPDATE OF state ON assignments
WHEN old.state = 'valid' AND new.state IS NOT 'valid'
BEGIN
  UPDATE clients SET
    credit_hi = credit_hi - (SELECT coalesce(nodes, 0) >> 32 FROM units WHERE id = old.unit_id),
    credit_lo = credit_lo - (SELECT coalesce(nodes, 0) & 4294967295 FROM units WHERE id = old.unit_id)
  WHERE id = old.client_id;
END;

ALTER TABLE units ADD COLUMN kshort INTEGER NOT NULL DEFAULT 0 CHECK (kshort = 0 OR kshort = 1);

-- nq schema version 4: the last progress of every assignment (issue 10). See docs/store.md.
-- A client reports, with each `progress`, the share of the unit it has done (0..1), the solve
-- time spent on it (every run of a resumed unit together) and the nodes counted; the server keeps
-- the last report and when it came, for `nq-admin units --state leased` (percent, rate, ETA) and
-- the job's ETA. All NULL until the first report, so a database from version 3 keeps its data.
ALTER TABLE assignments ADD COLUMN progress REAL
  CHECK (progress IS NULL OR (progress >= 0 AND progress <= 1));
ALTER TABLE assignments ADD COLUMN progress_seconds REAL;
ALTER TABLE assignments ADD COLUMN progress_nodes INTEGER;
ALTER TABLE assignments ADD COLUMN progress_at INTEGER;

-- nq schema version 15: the job queue (issue 36). See docs/store.md, "The job queue".
-- (Versions may have gaps.)
--
-- job_queue: jobs the operator queued with `nq-admin job add N ...`, in the order they run. A
--   row holds the job's settings (those of nq-server's job options; 0 = the option's default)
--   until the server starts it: then `state` becomes `started` and `job_id` names the job made
--   from it. `cancelled`: the operator took it back (`nq-admin job cancel ID`) before it started.
--   `failed`: the server could not make the job (`error` says why; the queue went on).

CREATE TABLE job_queue (
  id           INTEGER PRIMARY KEY,
  n            INTEGER NOT NULL CHECK (n BETWEEN 4 AND 32),
  depth        INTEGER NOT NULL DEFAULT 0 CHECK (depth >= 0),
  unit_seconds REAL NOT NULL DEFAULT 0 CHECK (unit_seconds >= 0),
  max_depth    INTEGER NOT NULL DEFAULT 0 CHECK (max_depth >= 0),
  quorum       INTEGER NOT NULL CHECK (quorum >= 1),
  max_results  INTEGER NOT NULL CHECK (max_results >= quorum),
  state        TEXT NOT NULL DEFAULT 'queued'
               CHECK (state IN ('queued', 'started', 'cancelled', 'failed')),
  added        INTEGER NOT NULL,
  changed      INTEGER NOT NULL DEFAULT 0,
  job_id       INTEGER,
  error        TEXT
);

CREATE INDEX job_queue_queued ON job_queue(id) WHERE state = 'queued';

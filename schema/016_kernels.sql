-- nq schema version 16: kernel-diverse verification and the reference audit (issue 30).
-- See docs/store.md and docs/reliability.md. (Versions may have gaps.)
--
-- jobs.diverse_kernels: a unit of the job is verified only when its agreeing results came from
--   at least this many different kernels (assignments.backend), besides the distinct-key rule;
--   0 = off. Jobs made before this version keep 0 (their verification rule does not change).
-- assignments.kernel: the kernel the server named in the assignment (`kernel` in `work`), NULL
--   when it left the choice to the client.
-- units.kernels: the distinct kernels among the results that verified the unit (0 for a unit
--   verified before this version, or not verified).
-- clients.kernels_refused: kernels the client answered no_kernel for, comma-separated (at most
--   a few short names): the server names none of them to it again.
-- clients.kernel_native: the client's own kernel as the server learned it from its results (the
--   most capable CPU kernel, or a GPU label): kept, so that a client whose recent results all ran
--   kernels the server named is not taken for a slower machine.
-- audits: `nq-admin audit` runs -- K verified units recomputed with the reference solver on the
--   operator's machine. outcome: 'agree' (every unit matched), 'disagree' (at least one did not:
--   those units were re-opened), 'empty' (no verified unit to sample).
ALTER TABLE jobs ADD COLUMN diverse_kernels INTEGER NOT NULL DEFAULT 0
  CHECK (diverse_kernels BETWEEN 0 AND 8);
ALTER TABLE assignments ADD COLUMN kernel TEXT CHECK (kernel IS NULL OR length(kernel) < 16);
ALTER TABLE units ADD COLUMN kernels INTEGER NOT NULL DEFAULT 0 CHECK (kernels >= 0);
CREATE INDEX units_two_kernels ON units(job_id) WHERE state = 'verified' AND kernels >= 2;
ALTER TABLE clients ADD COLUMN kernels_refused TEXT NOT NULL DEFAULT ''
  CHECK (length(kernels_refused) <= 128);
ALTER TABLE clients ADD COLUMN kernel_native TEXT NOT NULL DEFAULT ''
  CHECK (length(kernel_native) <= 128);
CREATE TABLE audits (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  at INTEGER NOT NULL,           -- Unix seconds, when it finished
  sample INTEGER NOT NULL CHECK (sample >= 0),   -- units asked for
  seed INTEGER NOT NULL,         -- the draw's seed (the same seed draws the same units)
  checked INTEGER NOT NULL CHECK (checked >= 0), -- units recomputed
  mismatched INTEGER NOT NULL CHECK (mismatched >= 0),
  seconds REAL NOT NULL CHECK (seconds >= 0),
  outcome TEXT NOT NULL CHECK (outcome IN ('agree', 'disagree', 'empty')),
  detail TEXT NOT NULL DEFAULT '' -- the mismatched units' texts, the first few
);
CREATE INDEX audits_job ON audits(job_id, at);

-- nq schema version 17: a queued job's --diverse-kernels (issue 30 on issue 36's queue). See
-- docs/store.md, "The job queue".
--
-- job_queue.diverse_kernels: the option as given to `nq-admin job add`; -1 = not given, the
--   job then takes N's default when it starts (2 for an N with no published count, else 0).

ALTER TABLE job_queue ADD COLUMN diverse_kernels INTEGER NOT NULL DEFAULT -1
  CHECK (diverse_kernels BETWEEN -1 AND 8);

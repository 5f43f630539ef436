-- nq schema version 2: operator retry of disputed units. See docs/store.md.
-- extra_results: results a unit may get on top of its job's max_results, granted by the operator
-- (srv_unit_retry / `nq-admin unit retry`). 0 for every unit that was never retried, so existing
-- databases behave as before. The scheduler's cap on results is max_results + extra_results:
--   need = max(0, min(quorum - best, max_results + extra_results - results) - live)
ALTER TABLE units ADD COLUMN extra_results INTEGER NOT NULL DEFAULT 0 CHECK (extra_results >= 0);

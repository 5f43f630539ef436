-- nq schema version 24: the root of a job's results, sampled with its history. See
-- docs/evidence.md, "The root and the receipts", and docs/http.md. (Versions may have gaps.)
--
-- job_history.root: the Merkle root of the job's results at the sample (64 lowercase hex
--   digits; NULL in a sample taken before this version), job_history.leaves its leaf count.
--   Bounded with the history itself (SRV_HISTORY_MAX rows a job).

ALTER TABLE job_history ADD COLUMN root TEXT;
ALTER TABLE job_history ADD COLUMN leaves INTEGER;

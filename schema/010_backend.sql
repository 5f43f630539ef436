-- nq schema version 10: what computed each result (issue 31). See docs/store.md.
-- A result message may say which backend computed it: the CPU kernel ("scalar", "avx2",
-- "avx512"), a GPU ("opencl:<device name>"), or several joined by '+'. NULL for a result of an
-- older client, or of one that does not say, so a database from an older version keeps its data.
ALTER TABLE assignments ADD COLUMN backend TEXT CHECK (backend IS NULL OR length(backend) <= 128);

-- Schema version 2: trials remember which code measured them.
-- code_id hashes gsortd's version and its kernel sources; the tuner reuses a
-- trial only when its code_id matches, so results measured with older
-- kernels are kept for history but never stand in for new measurements.
-- Rows from version 1 get '' (matches no current code).
ALTER TABLE trials ADD COLUMN code_id TEXT NOT NULL DEFAULT '';
DROP INDEX trials_by_config;
CREATE INDEX trials_by_config ON trials (device_id, algorithm, key_bits, payload, n, distribution, params, code_id);
PRAGMA user_version = 2;

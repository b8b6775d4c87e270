-- Schema version 4: a plan row keeps its baseline (issue 33): what the
-- untuned daemon would have used for that shape and size (the default
-- algorithm with its built-in parameters, or the host sort below a GPU's
-- crossover) and its time measured in the same tune, so that a reader sees
-- what tuning bought, and a row that did not beat its baseline by more
-- than the noise holds the baseline itself. Rows from version 3 have none
-- ('' and NULL): they were planned before the baseline was measured.
ALTER TABLE plan ADD COLUMN baseline_algorithm TEXT NOT NULL DEFAULT '';
ALTER TABLE plan ADD COLUMN baseline_ms REAL;
PRAGMA user_version = 4;

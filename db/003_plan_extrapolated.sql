-- Schema version 3: a plan row says whether its size was measured or
-- extrapolated (issue 18). A tune writes rows past its largest measured
-- size from each candidate's measured scaling, so the daemon follows a
-- prediction there instead of the last measured winner; gsort-query plan
-- shows which rows are which. Rows from version 2 were all measured.
ALTER TABLE plan ADD COLUMN extrapolated INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 3;

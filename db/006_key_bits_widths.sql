-- Schema version 6: key_bits may be 8, 16, 32 or 64, so that a key type
-- of a new width needs no migration of its own (issue 35). SQLite cannot
-- change a CHECK in place: each table is rebuilt with its columns in the
-- same order, its rows copied whole. Foreign keys are on during
-- migrations, so the order matters: winners' new table refers to the new
-- trials table until both renames are done (a rename rewrites references
-- to the renamed table), and no row ever points at a dropped table.

CREATE TABLE trials_new (
    id            INTEGER PRIMARY KEY,
    device_id     INTEGER NOT NULL REFERENCES devices(id),
    algorithm     TEXT NOT NULL,
    key_bits      INTEGER NOT NULL CHECK (key_bits IN (8, 16, 32, 64)),
    payload       TEXT NOT NULL,
    n             INTEGER NOT NULL CHECK (n >= 0),
    distribution  TEXT NOT NULL,
    params        TEXT NOT NULL,
    median_ms     REAL,
    min_ms        REAL,
    max_ms        REAL,
    reps          INTEGER NOT NULL DEFAULT 0,
    valid         INTEGER NOT NULL CHECK (valid IN (0, 1)),
    reason        TEXT NOT NULL DEFAULT '',
    created       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    code_id       TEXT NOT NULL DEFAULT ''
);
INSERT INTO trials_new (id, device_id, algorithm, key_bits, payload, n, distribution, params,
                        median_ms, min_ms, max_ms, reps, valid, reason, created, code_id)
    SELECT id, device_id, algorithm, key_bits, payload, n, distribution, params,
           median_ms, min_ms, max_ms, reps, valid, reason, created, code_id FROM trials;

CREATE TABLE winners_new (
    device_id   INTEGER NOT NULL REFERENCES devices(id),
    algorithm   TEXT NOT NULL,
    key_bits    INTEGER NOT NULL CHECK (key_bits IN (8, 16, 32, 64)),
    payload     TEXT NOT NULL,
    bucket      INTEGER NOT NULL,
    params      TEXT NOT NULL,
    median_ms   REAL NOT NULL,
    trial_id    INTEGER REFERENCES trials_new(id),
    updated     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    PRIMARY KEY (device_id, algorithm, key_bits, payload, bucket)
);
INSERT INTO winners_new (device_id, algorithm, key_bits, payload, bucket, params, median_ms,
                         trial_id, updated)
    SELECT device_id, algorithm, key_bits, payload, bucket, params, median_ms, trial_id, updated
      FROM winners;

DROP TABLE winners;
DROP TABLE trials;
ALTER TABLE trials_new RENAME TO trials;
ALTER TABLE winners_new RENAME TO winners;
CREATE INDEX trials_by_config ON trials (device_id, algorithm, key_bits, payload, n, distribution,
                                         params, code_id);

CREATE TABLE plan_new (
    device_id           INTEGER NOT NULL REFERENCES devices(id),
    key_bits            INTEGER NOT NULL CHECK (key_bits IN (8, 16, 32, 64)),
    payload             TEXT NOT NULL,
    stable              INTEGER NOT NULL CHECK (stable IN (0, 1)),
    bucket              INTEGER NOT NULL,
    algorithm           TEXT NOT NULL,
    params              TEXT NOT NULL,
    median_ms           REAL NOT NULL,
    updated             TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    extrapolated        INTEGER NOT NULL DEFAULT 0,
    baseline_algorithm  TEXT NOT NULL DEFAULT '',
    baseline_ms         REAL,
    PRIMARY KEY (device_id, key_bits, payload, stable, bucket)
);
INSERT INTO plan_new (device_id, key_bits, payload, stable, bucket, algorithm, params, median_ms,
                      updated, extrapolated, baseline_algorithm, baseline_ms)
    SELECT device_id, key_bits, payload, stable, bucket, algorithm, params, median_ms,
           updated, extrapolated, baseline_algorithm, baseline_ms FROM plan;
DROP TABLE plan;
ALTER TABLE plan_new RENAME TO plan;

PRAGMA user_version = 6;

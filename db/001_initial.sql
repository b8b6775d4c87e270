-- gsortd tuning database, schema version 1.
-- Migrations are forward-only: never edit a released file, add NNN_name.sql.
-- Each file runs in one transaction and ends with PRAGMA user_version = N.

-- One row per device identity. A new driver version is a new device: older
-- rows stay for history but never serve the new driver.
CREATE TABLE devices (
    id              INTEGER PRIMARY KEY,
    platform        TEXT NOT NULL,
    name            TEXT NOT NULL,
    driver          TEXT NOT NULL,
    vendor          TEXT NOT NULL DEFAULT '',
    type            TEXT NOT NULL DEFAULT '',
    device_version  TEXT NOT NULL DEFAULT '',
    c_version       TEXT NOT NULL DEFAULT '',
    compute_units   INTEGER NOT NULL DEFAULT 0,
    max_wg_size     INTEGER NOT NULL DEFAULT 0,
    local_mem       INTEGER NOT NULL DEFAULT 0,
    global_mem      INTEGER NOT NULL DEFAULT 0,
    max_alloc       INTEGER NOT NULL DEFAULT 0,
    profiling       INTEGER NOT NULL DEFAULT 0,
    first_seen      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    last_seen       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    UNIQUE (platform, name, driver)
);

-- Every measured (or failed) configuration. params is JSON text.
CREATE TABLE trials (
    id            INTEGER PRIMARY KEY,
    device_id     INTEGER NOT NULL REFERENCES devices(id),
    algorithm     TEXT NOT NULL,
    key_bits      INTEGER NOT NULL CHECK (key_bits IN (32, 64)),
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
    created       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE INDEX trials_by_config ON trials (device_id, algorithm, key_bits, payload, n, distribution, params);

-- Best parameters per (device, algorithm, key class, payload kind, size bucket);
-- bucket = log2 of the n measured.
CREATE TABLE winners (
    device_id   INTEGER NOT NULL REFERENCES devices(id),
    algorithm   TEXT NOT NULL,
    key_bits    INTEGER NOT NULL CHECK (key_bits IN (32, 64)),
    payload     TEXT NOT NULL,
    bucket      INTEGER NOT NULL,
    params      TEXT NOT NULL,
    median_ms   REAL NOT NULL,
    trial_id    INTEGER REFERENCES trials(id),
    updated     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    PRIMARY KEY (device_id, algorithm, key_bits, payload, bucket)
);

-- Which algorithm serves (device, key class, payload kind, stability, bucket);
-- 'host' included.
CREATE TABLE plan (
    device_id   INTEGER NOT NULL REFERENCES devices(id),
    key_bits    INTEGER NOT NULL CHECK (key_bits IN (32, 64)),
    payload     TEXT NOT NULL,
    stable      INTEGER NOT NULL CHECK (stable IN (0, 1)),
    bucket      INTEGER NOT NULL,
    algorithm   TEXT NOT NULL,
    params      TEXT NOT NULL,
    median_ms   REAL NOT NULL,
    updated     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    PRIMARY KEY (device_id, key_bits, payload, stable, bucket)
);

PRAGMA user_version = 1;

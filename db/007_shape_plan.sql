-- Schema version 7: the plan of requests that are not one flat array
-- (issue 38): rows (a 2-D array sorted along its last axis) and top-k.
-- A row says which route the device's measurements chose for a point of
-- two sizes: bucket, floor(log2) of all the keys of the request, and sub,
-- floor(log2) of a row's length (kind 'rows') or of k (kind 'topk').
-- algorithm is what ran there (a device algorithm on this device, or a
-- host one), params its parameters as JSON, median_ms its end-to-end time
-- through the scheduler, baseline_* what the untuned daemon ran at the
-- same point and its time in the same measurement.
CREATE TABLE shape_plan (
    device_id           INTEGER NOT NULL REFERENCES devices(id),
    kind                TEXT NOT NULL CHECK (kind IN ('rows', 'topk')),
    key_bits            INTEGER NOT NULL CHECK (key_bits IN (8, 16, 32, 64)),
    payload             TEXT NOT NULL,
    bucket              INTEGER NOT NULL CHECK (bucket >= 0),
    sub                 INTEGER NOT NULL CHECK (sub >= 0),
    algorithm           TEXT NOT NULL,
    params              TEXT NOT NULL,
    median_ms           REAL NOT NULL,
    baseline_algorithm  TEXT NOT NULL DEFAULT '',
    baseline_ms         REAL,
    updated             TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    PRIMARY KEY (device_id, kind, key_bits, payload, bucket, sub)
);

PRAGMA user_version = 7;

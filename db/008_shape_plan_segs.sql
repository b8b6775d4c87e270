-- Schema version 8: segments (issue 38: CUB's segmented sort) join rows
-- and top-k in the plan of requests that are not one flat array. Kind
-- 'segs': bucket is floor(log2) of all the keys, sub floor(log2) of the
-- segments' mean length. SQLite cannot widen a CHECK in place, so the
-- table is made again with the same columns and its rows copied over (in
-- the migration's transaction).
CREATE TABLE shape_plan_8 (
    device_id           INTEGER NOT NULL REFERENCES devices(id),
    kind                TEXT NOT NULL CHECK (kind IN ('rows', 'topk', 'segs')),
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
INSERT INTO shape_plan_8 SELECT device_id, kind, key_bits, payload, bucket, sub, algorithm,
    params, median_ms, baseline_algorithm, baseline_ms, updated FROM shape_plan;
DROP TABLE shape_plan;
ALTER TABLE shape_plan_8 RENAME TO shape_plan;

PRAGMA user_version = 8;

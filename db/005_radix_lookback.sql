-- Schema version 5: one rule for parameter sets everywhere (issue 34): a
-- name a set leaves out takes the algorithm's default on the device. Radix
-- sets saved before its `lookback` parameter existed meant lookback=0 (the
-- upsweep, scan and scatter); the default on a GPU is now 2, so those sets
-- get lookback=0 written here and keep meaning what they meant. Sets that
-- are not valid JSON are left as they are: the reader refuses them.
UPDATE trials SET params = json_set(params, '$.lookback', 0)
 WHERE algorithm = 'radix' AND json_valid(params)
   AND json_type(params, '$.lookback') IS NULL;
UPDATE winners SET params = json_set(params, '$.lookback', 0)
 WHERE algorithm = 'radix' AND json_valid(params)
   AND json_type(params, '$.lookback') IS NULL;
UPDATE plan SET params = json_set(params, '$.lookback', 0)
 WHERE algorithm = 'radix' AND json_valid(params)
   AND json_type(params, '$.lookback') IS NULL;
PRAGMA user_version = 5;

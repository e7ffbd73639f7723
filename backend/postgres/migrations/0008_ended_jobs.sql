-- A job set's ended jobs per terminal state in submit order (the web
-- UI's job set page, backend.EndedJobs): a page is one descent of this
-- index and a scan of its rows. A job stored with no submit time sorts
-- first, as the memory backend orders it.
CREATE INDEX jobs_ended ON jobs (queue, job_set, state, (COALESCE(submit_time, -9223372036854775808)), id) WHERE NOT live;

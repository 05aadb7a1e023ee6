-- Every attempt of a delivery, kept as long as the delivery (deleted with it, by retention or with
-- its endpoint). Keyed by the delivery's seq, the rowid the worker records results by.
CREATE TABLE webhook_attempts (
  delivery_seq    INTEGER NOT NULL REFERENCES webhook_deliveries(seq) ON DELETE CASCADE,
  attempt         INTEGER NOT NULL,
  at              INTEGER NOT NULL,
  response_status INTEGER,
  duration_ms     INTEGER NOT NULL,
  error           TEXT,
  ok              INTEGER NOT NULL,
  PRIMARY KEY (delivery_seq, attempt)
) STRICT, WITHOUT ROWID;

-- Deliveries attempted before: their last attempt is the one known.
INSERT INTO webhook_attempts (delivery_seq, attempt, at, response_status, duration_ms, error, ok)
SELECT seq, attempt, at, response_status, coalesce(duration_ms, 0), error, status = 'succeeded'
FROM webhook_deliveries WHERE attempt > 0 AND at IS NOT NULL;

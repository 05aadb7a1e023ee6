-- Every attempt of a delivery, kept as long as the delivery (deleted with it, by retention or with
-- its endpoint).
CREATE TABLE webhook_attempts (
  delivery_seq    bigint NOT NULL REFERENCES webhook_deliveries (seq) ON DELETE CASCADE,
  attempt         integer NOT NULL,
  at              bigint NOT NULL,
  response_status integer,
  duration_ms     integer NOT NULL,
  error           text,
  ok              boolean NOT NULL,
  PRIMARY KEY (delivery_seq, attempt)
);

-- Deliveries attempted before: their last attempt is the one known.
INSERT INTO webhook_attempts (delivery_seq, attempt, at, response_status, duration_ms, error, ok)
SELECT seq, attempt, at, response_status, coalesce(duration_ms, 0), error, status = 'succeeded'
FROM webhook_deliveries WHERE attempt > 0 AND at IS NOT NULL;

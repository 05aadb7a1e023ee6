-- Each event is kept as its public envelope, the JSON text every reader sends on: a page of the
-- feed is its events' envelopes joined, and a webhook delivery's payload is its event's envelope.
-- The service writes it (envelopeJson in src/events/types.ts); the events already recorded are
-- rewritten here in the same form (times as RFC 3339 UTC with milliseconds; `data` was stored as
-- JSON text, so it is copied as it is).
ALTER TABLE events ADD COLUMN envelope TEXT NOT NULL DEFAULT '';
UPDATE events SET envelope =
  '{"id":' || json_quote(id) || ',"type":' || json_quote(type) || ',"occurredAt":"' ||
  strftime('%Y-%m-%dT%H:%M:%S', (occurred_at - ((occurred_at % 1000) + 1000) % 1000) / 1000, 'unixepoch') ||
  printf('.%03dZ', ((occurred_at % 1000) + 1000) % 1000) || '"' ||
  CASE WHEN vehicle_id IS NULL THEN '' ELSE ',"vehicleId":' || json_quote(vehicle_id) END ||
  ',"data":' || data || '}';
ALTER TABLE events DROP COLUMN data;

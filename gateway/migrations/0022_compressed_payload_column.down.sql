UPDATE events SET payload = payload_z WHERE payload_z IS NOT NULL;
ALTER TABLE events DROP COLUMN payload_z;

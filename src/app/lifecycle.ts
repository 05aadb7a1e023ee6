// What starts once the app is ready and stops when it closes, beyond the HTTP server itself.
import type { FastifyInstance } from 'fastify';
import type { Services } from './services.ts';

export function addLifecycle(app: FastifyInstance, parts: Services): void {
  const { mqtt, listeners, deliveries, offline } = parts;
  app.addHook('onReady', async () => {
    await Promise.all([mqtt.start(), listeners.osmand?.start(), listeners.teltonika?.start()]);
    deliveries.start();
    parts.commands.start();
    void offline.runOnce();
    void parts.maintenanceChecks.runOnce();
    void parts.reportChecks.runOnce();
  });
  // preClose: MQTT and the device listeners stop taking messages and answer those in hand while
  // the store is still open.
  app.addHook('preClose', async () => {
    await Promise.all([mqtt.stop(), listeners.osmand?.stop(), listeners.teltonika?.stop()]);
  });
  // onClose: nothing here waits for a peer. The delivery worker cuts its attempts under way short
  // and gives their deliveries back (sent again after the restart), then the outbound lets go.
  app.addHook('onClose', async () => {
    parts.retention.stop();
    parts.eventRetention.stop();
    parts.peopleCleanup.stop();
    parts.auditRetention.stop();
    parts.rollupRepairs.stop();
    offline.stop();
    await parts.maintenanceChecks.stop();
    await parts.reportChecks.stop();
    parts.commands.stop();
    await deliveries.stop();
    parts.pacing?.close();
    await parts.outbound.close();
    await parts.sso.close();
    await parts.telemetry.drain();
    await parts.devices.stop();
  });
}

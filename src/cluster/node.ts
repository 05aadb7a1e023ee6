// One node of a cluster: what this node does goes out on the bus, what the other nodes did comes
// in and is applied to this node's in-memory parts (latest state, live streams, credential caches).
// The database stays the one source of truth; the bus only keeps the memory of each node current.
import type { AuthService } from '../auth/service.ts';
import type { Bus, ClusterEvent } from '../bus/bus.ts';
import type { StreamService } from '../streams/service.ts';
import { typesTouched } from '../streams/stream.ts';
import type { LatestView } from '../telemetry/latest.ts';
import type { LatestState, StoredRecord } from '../telemetry/store.ts';
import type { StatusChange } from '../vehicles/store.ts';

type Change = Pick<StatusChange, 'from' | 'to' | 'reason' | 'at'>;

export interface NodeParts {
  latest: LatestView;
  streams: Pick<StreamService, 'remoteTelemetry' | 'statusChanged' | 'forgetVehicle' | 'credentialRevoked' | 'recheckCredentials' | 'release' | 'endedElsewhere' | 'resnapshot'
  >;
  auth: Pick<AuthService, 'forgetKey'>;
  /** Rebuilds the latest view from the store. */
  reloadLatest(): Promise<void>;
  log: { warn(obj: object, msg: string): void };
}

/** The local events the services report, each sent on to the other nodes. */
export interface ClusterOutbox {
  telemetry(organizationId: string, records: readonly StoredRecord[], states: readonly LatestState[]): void;
  statusChanged(organizationId: string, vehicleId: string, change: Change): void;
  vehicleDeleted(organizationId: string, vehicleId: string): void;
  keyRevoked(keyId: string, lookupId: string): void;
  /** An OAuth client was deleted: what its tokens opened (live streams) ends on every node. */
  clientDeleted(clientId: string): void;
  /** This node took a live stream over, or ended one another node holds. */
  stream(event: 'taken' | 'ended', streamId: string): void;
}

export function joinCluster(bus: Bus, parts: NodeParts): ClusterOutbox {
  bus.subscribe((event) => apply(event));
  bus.onResync(() => void resync());

  function apply(event: ClusterEvent): void {
    switch (event.type) {
      case 'telemetry':
        parts.streams.remoteTelemetry(event.organizationId, event.states.map((state) => parts.latest.merge(state)), event.touched);
        return;
      case 'status':
        parts.streams.statusChanged(event.organizationId, event.vehicleId, event.change);
        return;
      case 'vehicle-deleted':
        parts.latest.forget(event.organizationId, event.vehicleId);
        parts.streams.forgetVehicle(event.organizationId, event.vehicleId);
        return;
      case 'key-revoked':
        parts.auth.forgetKey(event.keyId, event.lookupId);
        parts.streams.credentialRevoked(event.keyId);
        return;
      case 'client-deleted':
        parts.streams.credentialRevoked(event.clientId);
        return;
      case 'stream-taken':
        parts.streams.release(event.streamId);
        return;
      case 'stream-ended':
        parts.streams.endedElsewhere(event.streamId);
        return;
    }
  }

  let resyncing: Promise<void> | undefined;
  /**
   * Events were lost: read the latest state back from the store, then send streams a snapshot;
   * streams whose credential was revoked meanwhile end.
   */
  async function resync(): Promise<void> {
    if (resyncing !== undefined) return resyncing;
    resyncing = (async () => {
      try {
        await parts.reloadLatest();
        parts.streams.resnapshot();
        await parts.streams.recheckCredentials();
      } catch (error) {
        parts.log.warn({ err: error }, 'cluster: could not reload the latest state after a bus outage; it will be retried at the next one');
      } finally {
        resyncing = undefined;
      }
    })();
    return resyncing;
  }

  return {
    telemetry(organizationId, records, states) {
      const touched = typesTouched(records);
      bus.publish({ type: 'telemetry', organizationId, states: [...states], touched: states.map((s) => touched.get(s.vehicleId) ?? 0) });
    },
    statusChanged(organizationId, vehicleId, change) {
      bus.publish({ type: 'status', organizationId, vehicleId, change: { from: change.from, to: change.to, reason: change.reason, at: change.at } });
    },
    vehicleDeleted: (organizationId, vehicleId) => bus.publish({ type: 'vehicle-deleted', organizationId, vehicleId }),
    keyRevoked: (keyId, lookupId) => bus.publish({ type: 'key-revoked', keyId, lookupId }),
    clientDeleted: (clientId) => bus.publish({ type: 'client-deleted', clientId }),
    stream: (event, streamId) => bus.publish(event === 'taken' ? { type: 'stream-taken', streamId, node: bus.node } : { type: 'stream-ended', streamId }),
  };
}

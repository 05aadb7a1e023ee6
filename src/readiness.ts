// What a backing part (the store, MQTT, a device listener, the cluster) reports to /readyz.

/**
 * What a readiness check found: `up` (resolving with nothing means up too), `disabled` (turned off
 * by configuration), or `{ degraded: detail }`: the part is impaired but the service still serves,
 * so readiness stays 200 and says what is wrong. A check that throws is down: 503.
 */
export type CheckState = 'up' | 'disabled' | { degraded: string };
export type ReadinessCheck = () => Promise<CheckState | void>;

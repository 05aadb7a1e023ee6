import { randomBase62, timeOrderedId } from '../auth/keys.ts';

export const newGeofenceId = (): string => `gf_${randomBase62(20)}`;
export const newRuleId = (): string => `rule_${randomBase62(20)}`;
export const newAlertId = (): string => `alert_${timeOrderedId(20)}`;

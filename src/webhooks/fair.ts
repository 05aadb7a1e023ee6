// Which due deliveries a claim takes, so that no organization's backlog holds up another's: at
// most `perEndpoint` deliveries of an endpoint and `perOrganization` of an organization are
// leased at once (those leased already count), and the claim takes them in turns: each
// organization's first, then each one's second, and within an organization its endpoints in
// turn. Among equals the longest due goes first.

export interface DueDelivery {
  seq: number;
  webhookId: string;
  organizationId: string;
}

export interface ClaimCaps {
  /** Deliveries of one endpoint leased at once (attempts under way and claimed ahead). */
  perEndpoint: number;
  /** Deliveries of one organization leased at once. */
  perOrganization: number;
}

export const UNCAPPED: ClaimCaps = { perEndpoint: Infinity, perOrganization: Infinity };

function counts(of: Iterable<string>): Map<string, number> {
  const n = new Map<string, number>();
  for (const key of of) n.set(key, (n.get(key) ?? 0) + 1);
  return n;
}

/**
 * The seqs to claim, in the order to attempt them. `due`: the due deliveries not leased, longest
 * due first; `leased`: those leased now.
 */
export function fairClaim(due: readonly DueDelivery[], leased: readonly Omit<DueDelivery, 'seq'>[], limit: number, caps: ClaimCaps): number[] {
  if (limit <= 0) return [];
  const heldByEndpoint = counts(leased.map((d) => d.webhookId));
  const heldByOrganization = counts(leased.map((d) => d.organizationId));
  const endpointTurn = new Map<string, number>();
  const candidates: { d: DueDelivery; turn: number; position: number }[] = [];
  for (const [position, d] of due.entries()) {
    const turn = (endpointTurn.get(d.webhookId) ?? 0) + 1;
    if ((heldByEndpoint.get(d.webhookId) ?? 0) + turn > caps.perEndpoint) continue;
    endpointTurn.set(d.webhookId, turn);
    candidates.push({ d, turn, position });
  }
  // Within an organization its endpoints take turns; then the organizations take turns.
  candidates.sort((a, b) => a.turn - b.turn || a.position - b.position);
  const organizationTurn = new Map<string, number>();
  const fair: { seq: number; turn: number; position: number }[] = [];
  for (const { d, position } of candidates) {
    const turn = (organizationTurn.get(d.organizationId) ?? 0) + 1;
    if ((heldByOrganization.get(d.organizationId) ?? 0) + turn > caps.perOrganization) continue;
    organizationTurn.set(d.organizationId, turn);
    fair.push({ seq: d.seq, turn, position });
  }
  fair.sort((a, b) => a.turn - b.turn || a.position - b.position);
  return fair.slice(0, limit).map((f) => f.seq);
}

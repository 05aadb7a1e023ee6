// Commands through the API for the command suites: read one, send one (202 asserted), wait for a status.
import assert from 'node:assert/strict';
import type { TestApp } from './app.ts';
import { waitUntil } from './wait.ts';

export interface CommandSeen {
  id: string;
  status: string;
  channel: string;
  result: string | null;
  error: string | null;
  sentAt: string | null;
}

export function commandsOf(ctx: Pick<TestApp, 'request'>, every = 10) {
  const command = async (id: string) => (await ctx.request('GET', `/v2/commands/${id}`)).json<CommandSeen>();
  return {
    command,
    send: async (vehicleId: string, body: Record<string, unknown>): Promise<CommandSeen> => {
      const res = await ctx.request('POST', `/v2/fleet/vehicles/${vehicleId}/commands`, { body });
      assert.equal(res.statusCode, 202, res.body);
      return res.json<CommandSeen>();
    },
    /** `every`: how often it looks (each look is a request, counted by the rate limit). */
    statusBecomes: async (id: string, status: string): Promise<void> => {
      await waitUntil(async () => (await command(id)).status === status, `command ${id} ${status}`, 5_000, { every });
    },
  };
}

// OsmAnd's command channel: the apps hold no connection, so nothing is ever sent from here. A
// queued command waits for the device's next request, which the route answers with its text
// (routes.ts); `queue: false` is therefore always refused for OsmAnd (no device is connected now).
import type { CommandChannel } from '../../commands/channel.ts';

export const osmandChannel: CommandChannel = {
  name: 'osmand',
  connected: () => false,
  offer: () => undefined,
};

// The reader of the feed case of bench/events.bench.ts, in its own process (so the client never
// competes with the server for the server's event loop): follows `GET /v2/events?limit=1000` page
// by page until a page comes back empty, as a client that reads the `Link: rel="next"` header
// would: it asks for the next page as soon as a page's headers arrive (and lets the request go out),
// then reads and checks the page's body (two connections, at most two requests under way). Every page's body `next` is
// checked to be the `after` of the link it followed. Run with one JSON argument ({url, key});
// prints one JSON line.
import { Agent, request } from 'undici';

export interface FeedReadOutcome {
  events: number;
  pages: number;
  firstId: string | null;
  lastId: string | null;
  /** Events whose id is not above the one before (the bench's ids rise with `seq`): a repeat or a step back. */
  outOfOrder: number;
  seconds: number;
  /** CPU the reader itself used, as a fraction of one core. */
  readerCpu: number;
}

interface Page {
  events: Array<{ id: string }>;
  next: string;
}

if (import.meta.main) {
  const { url, key } = JSON.parse(process.argv[2] ?? '') as { url: string; key: string };
  const dispatcher = new Agent({ connections: 2 });
  const headers = { authorization: `Bearer ${key}` };
  const get = (path: string) => request(`${url}${path}`, { headers, dispatcher });
  let events = 0;
  let pages = 0;
  let firstId: string | null = null;
  let lastId: string | null = null;
  let outOfOrder = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  let pending = get('/v2/events?limit=1000');
  for (;;) {
    const res = await pending;
    if (res.statusCode !== 200) throw new Error(`GET /v2/events: ${res.statusCode} ${await res.body.text()}`);
    const link = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link ?? ''));
    if (link === null) throw new Error(`GET /v2/events: no next link (${String(res.headers.link)})`);
    pending = get(link[1]!);
    // undici puts the request on the wire on a later turn of the event loop: without this turn it
    // went out only after this page's body had been read and parsed (measured: 0.77 ms from the
    // call to the server's handler, against 0.29 ms with it), and the two sides took turns.
    await new Promise((resolve) => setImmediate(resolve));
    const page = (await res.body.json()) as Page;
    pages++;
    if (new URLSearchParams(link[1]!.split('?')[1]).get('after') !== page.next) throw new Error(`the link ${link[1]} is not the page's next ${page.next}`);
    if (page.events.length === 0) break;
    for (const event of page.events) {
      if (lastId !== null && event.id <= lastId) outOfOrder++;
      lastId = event.id;
    }
    events += page.events.length;
    firstId ??= page.events[0]!.id;
  }
  await (await pending).body.dump();
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  await dispatcher.close();
  const outcome: FeedReadOutcome = { events, pages, firstId, lastId, outOfOrder, seconds, readerCpu: (used.user + used.system) / 1e6 / seconds };
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
}

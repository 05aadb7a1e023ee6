// A TCP proxy in front of a shared server (PostgreSQL, Redis) that a test can cut (every connection
// dropped, new ones closed at once, as when the server's host goes away) and restore, without
// touching the server that other test files share.
import net from 'node:net';

export interface TcpProxy {
  /** Where clients connect instead of the server. */
  readonly host: string;
  readonly port: number;
  /** Drops every connection; new ones are accepted and closed at once. */
  cut(): void;
  /** New connections reach the server again. */
  restore(): void;
  close(): Promise<void>;
}

export async function tcpProxy(host: string, port: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let isCut = false;
  const server = net.createServer((client) => {
    if (isCut) {
      client.destroy();
      return;
    }
    const upstream = net.connect(port, host);
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  function cut() {
    isCut = true;
    for (const socket of sockets) socket.destroy();
  }
  return {
    host: '127.0.0.1',
    port: (server.address() as net.AddressInfo).port,
    cut,
    restore() {
      isCut = false;
    },
    async close() {
      cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A proxy in front of the server a URL names (`postgres://…`, `redis://…`), and the URL through it. */
export async function urlProxy(target: string, defaultPort: number) {
  const url = new URL(target);
  const proxy = await tcpProxy(url.hostname, Number(url.port || defaultPort));
  url.hostname = proxy.host;
  url.port = String(proxy.port);
  return {
    url: url.toString(),
    cut: () => proxy.cut(),
    restore: () => proxy.restore(),
    close: () => proxy.close(),
  };
}

/** A server on a free loopback port and one client, for a whole test file (replies validated against the schema). */
import { afterAll, beforeAll } from 'vitest';
import { Client } from '../../src/client/client.js';
import { startServer, type Server } from '../../src/server/server.js';

/** Starts them in `beforeAll`, closes them in `afterAll`; read `server` and `client` inside tests. */
export function serverFixture(): { readonly server: Server; readonly client: Client } {
  const ctx: { server?: Server; client?: Client } = {};
  beforeAll(async () => {
    ctx.server = await startServer({ endpoint: 'tcp://127.0.0.1:0', validateReplies: true });
    ctx.client = new Client({ endpoint: ctx.server.endpoint, timeoutMs: 20_000 });
  });
  afterAll(async () => {
    await ctx.client?.close();
    await ctx.server?.close();
  });
  return {
    get server(): Server {
      if (ctx.server === undefined) throw new Error('serverFixture: used outside a test');
      return ctx.server;
    },
    get client(): Client {
      if (ctx.client === undefined) throw new Error('serverFixture: used outside a test');
      return ctx.client;
    },
  };
}

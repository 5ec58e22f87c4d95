import { afterAll, beforeAll } from 'vitest';
import { Client } from '../../src/client/client.js';
import { RemoteEnv } from '../../src/client/remote-env.js';
import { startServer, type Server } from '../../src/server/server.js';
import { envContract } from './env-contract.js';

let server: Server;
let client: Client;

beforeAll(async () => {
  server = await startServer({ endpoint: 'tcp://127.0.0.1:0', validateReplies: true });
  client = new Client({ endpoint: server.endpoint, timeoutMs: 20_000 });
});

afterAll(async () => {
  await client.close();
  await server.close();
});

// One shared client (sessions multiplexed on one DEALER) and, for one fixture run, a client per env.
envContract('RemoteEnv over ZeroMQ (shared client)', async () => new RemoteEnv(client));
envContract('RemoteEnv over ZeroMQ (own client)', async () => new RemoteEnv({ endpoint: server.endpoint, timeoutMs: 20_000 }));

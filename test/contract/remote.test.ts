import { RemoteEnv } from '../../src/client/remote-env.js';
import { serverFixture } from '../helpers/server-fixture.js';
import { envContract } from './env-contract.js';

const fx = serverFixture();

// One shared client (sessions multiplexed on one DEALER) and, for one fixture run, a client per env.
envContract('RemoteEnv over ZeroMQ (shared client)', async () => new RemoteEnv(fx.client));
envContract('RemoteEnv over ZeroMQ (own client)', async () => new RemoteEnv({ endpoint: fx.server.endpoint, timeoutMs: 20_000 }));

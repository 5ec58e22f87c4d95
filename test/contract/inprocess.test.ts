import { Env } from '../../src/env/env.js';
import { envContract } from './env-contract.js';

envContract('in-process Env', async () => new Env());

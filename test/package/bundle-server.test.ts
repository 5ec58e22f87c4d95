/**
 * The wheel's server bundle keeps, per platform, the zeromq addon that zeromq's loader (cmake-ts) tries first:
 * the highest Node ABI of each (os, arch, libc) in the package's build manifest.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bestAddons } from '../../scripts/package/bundle-server.js';

const key = (o: Record<string, unknown>): string => JSON.stringify({ name: '', runtime: 'node', ...o });

describe('bestAddons', () => {
  it('keeps the highest ABI per os/arch/libc and skips entries it cannot read', () => {
    const manifest = {
      [key({ os: 'linux', arch: 'x64', libc: 'glibc', abi: 115 })]: 'linux/x64/node/glibc-115-Release/addon.node',
      [key({ os: 'linux', arch: 'x64', libc: 'glibc', abi: 127 })]: 'linux/x64/node/glibc-127-Release/addon.node',
      [key({ os: 'linux', arch: 'x64', libc: 'musl', abi: 72 })]: 'linux/x64/node/musl-72-Release/addon.node',
      [key({ os: 'win32', arch: 'x64', libc: 'msvc', abi: 115 })]: 'win32\\x64\\node\\msvc-115-Release\\addon.node',
      [key({ os: 'darwin', arch: 'arm64', libc: 'libc' })]: 'darwin/no-abi/addon.node',
    };
    expect(bestAddons(manifest).map((a) => [a.os, a.arch, a.libc, a.abi, a.path])).toEqual([
      ['linux', 'x64', 'glibc', 127, 'linux/x64/node/glibc-127-Release/addon.node'],
      ['linux', 'x64', 'musl', 72, 'linux/x64/node/musl-72-Release/addon.node'],
      ['win32', 'x64', 'msvc', 115, 'win32\\x64\\node\\msvc-115-Release\\addon.node'],
    ]);
  });

  it('on the installed zeromq: one addon for each platform a wheel is built for', () => {
    const manifest = JSON.parse(readFileSync(new URL('../../node_modules/zeromq/build/manifest.json', import.meta.url), 'utf8')) as Record<string, string>;
    const ids = bestAddons(manifest).map((a) => `${a.os}-${a.arch}-${a.libc}`);
    for (const id of ['linux-x64-glibc', 'linux-arm64-glibc', 'linux-x64-musl', 'linux-arm64-musl', 'darwin-x64-libc', 'darwin-arm64-libc', 'win32-x64-msvc', 'win32-arm64-msvc']) {
      expect(ids).toContain(id);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });
});

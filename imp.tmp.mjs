const mods = process.argv.slice(2);
const t0 = performance.now(); const c0 = process.cpuUsage();
for (const m of mods) { if (m === 'ZSTD') { const z = await import('./dist/src/export/zstd-encode.js'); await z.zstdArenaEncoder(); } else if (m === 'PRESET') { const l = await import('./dist/src/config/load.js'); l.presetConfig('default'); } else await import('./dist/' + m); }
const c = process.cpuUsage(c0);
console.log(mods.join(' '), 'wall', (performance.now() - t0).toFixed(0), 'ms cpu', ((c.user + c.system) / 1000).toFixed(0));

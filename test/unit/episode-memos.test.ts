/**
 * Where a simulation's memos live. The command handlers' memos of a simulation (its last `company status`, listing,
 * market order, accept log, listing entries and text chain, employees by name) are held by the simulation (`Simulation.memos`), the
 * JSON writer's memos on the values and lists they belong to (a non-enumerable symbol property), the claimed tasks on
 * the tasks array, the clients' order by name on the clients array and a world's market index by title in its world
 * template's memo: not in module-level WeakMaps, whose values V8's young-generation collector treats as
 * reachable while the map is in the old generation (a finished episode's memos and all they reach were promoted in a
 * bulk run's workers: `node --trace-gc-nvp`, ~0.87 MB promoted per scavenge, ~0.06 MB since). Values frozen before
 * they are memoised keep their memos in WeakMaps still, and print the same.
 */
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { browsable, Simulation, type Task } from '../../src/sim/index.js';
import type { Client } from '../../src/sim/model/types.js';
import { claimAccepted, claimedTasks, clientsByName } from '../../src/sim/model/status.js';
import { listChain, memoList, memoRendered, memoRenderedShallow, PyFloat, pyJsonDumps, type Out } from '../../src/sim/py/pyjson.js';
import { oraclePyJsonDumps } from '../helpers/pyjson-oracle.js';

const ids = (ts: readonly { id: number }[]): number[] => ts.map((t) => t.id);

describe('episode memos are held by what they belong to', () => {
  it("a simulation's handler memos are its own; its world's listing entries are its world template's", () => {
    const cfg = loadPreset('default');
    const sim = Simulation.create(cfg, { seed: 7 });
    const m = sim.memos;
    expect(m).toEqual({ companyStatus: null, listing: null, acceptLog: null, market: null, entries: null, world: { entries: null, titles: expect.any(Map), uuids: expect.any(Map) }, employees: null });
    sim.execute('company status');
    sim.execute('company status');
    const listed = sim.execute('market browse --limit 3').value as { tasks: { task_id: string }[] };
    sim.execute(`task accept --task-id ${(listed.tasks[0] as { task_id: string }).task_id}`);
    expect(m.companyStatus).not.toBeNull();
    expect(m.listing).not.toBeNull();
    expect(m.market).not.toBeNull();
    expect(m.acceptLog?.length).toBe(1);
    expect(m.entries).not.toBeNull();
    expect(m.world?.entries).toBe(m.entries?.world);
    // Another simulation on the seed: memos of its own, the world's entries shared while the world is the same.
    const other = Simulation.create(cfg, { seed: 7 });
    expect(other.memos).not.toBe(m);
    expect(other.memos.listing).toBeNull();
    if (other.memos.world === m.world) {
      other.execute('market browse --limit 3');
      expect(other.memos.entries?.world).toBe(m.entries?.world);
    }
    // A restored simulation (no world template) starts with none.
    const restored = Simulation.restore(sim.snapshot());
    expect(restored.memos.world).toBeNull();
    expect(restored.memos.listing).toBeNull();
    expect(pyJsonDumps(restored.execute('market browse').value as Out)).toBe(pyJsonDumps(sim.execute('market browse').value as Out));
  });

  it("a context of the caller's ({ state, cfg }) lists what the simulation lists, from memos of its own", () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 3 });
    const mine = browsable(sim);
    const listing = sim.memos.listing;
    const foreign = browsable({ state: sim.state, cfg: sim.cfg });
    expect(ids(foreign)).toEqual(ids(mine));
    expect(sim.memos.listing).toBe(listing);
    expect(browsable(sim)).toBe(mine);
  });

  it('memoised values and chained lists show no key, copy or comparison of the memo', () => {
    const v = memoRendered({ a: 1, b: [new PyFloat(0.5), 'x'], c: { d: null } } as Out);
    const s = memoRenderedShallow({ task_id: 'T', n: 2, r: Object.freeze([Object.freeze({ q: new PyFloat(1.25) })]) } as unknown as { [k: string]: Out });
    const list = memoList([v, s], listChain());
    for (const x of [v, s] as object[]) {
      expect(Object.isFrozen(x)).toBe(true);
      expect(Object.keys(x)).toEqual(Object.keys(JSON.parse(JSON.stringify(x)) as object));
      expect({ ...x }).toEqual(JSON.parse(JSON.stringify(x)));
      expect(Object.getOwnPropertySymbols({ ...x })).toEqual([]);
      expect(structuredClone(x)).toEqual(JSON.parse(JSON.stringify(x)));
    }
    expect(Object.keys(list)).toEqual(['0', '1']);
    expect(JSON.stringify(list)).toBe(JSON.stringify([v, s]));
    for (let i = 0; i < 3; i++) {
      for (const indent of [2, null]) expect(pyJsonDumps(list, indent)).toBe(oraclePyJsonDumps([v, s], indent));
    }
  });

  it('values and lists frozen before they are memoised print the same (memos kept aside)', () => {
    const frozen = (): Out => Object.freeze({ a: Object.freeze([1, 2]), b: new PyFloat(2.5), c: 'z' }) as unknown as Out;
    const plain = (): Out => ({ a: [1, 2], b: new PyFloat(2.5), c: 'z' }) as Out;
    const f = memoRendered(frozen());
    const p = memoRendered(plain());
    const list = Object.freeze([f, p, f]) as unknown as Out[];
    const chain = listChain();
    memoList(list, chain);
    const alsoFrozen = Object.freeze([p, f]) as unknown as Out[];
    memoList(alsoFrozen, chain);
    for (let i = 0; i < 3; i++) {
      for (const indent of [2, null, 0]) {
        expect(pyJsonDumps(f, indent)).toBe(oraclePyJsonDumps(frozen(), indent));
        expect(pyJsonDumps(list, indent)).toBe(oraclePyJsonDumps([frozen(), plain(), frozen()], indent));
        expect(pyJsonDumps(alsoFrozen, indent)).toBe(oraclePyJsonDumps([plain(), frozen()], indent));
      }
    }
    // A list given a new chain after it was frozen renders through the new one.
    const open = [p, f] as Out[];
    memoList(open, listChain());
    Object.freeze(open);
    memoList(open, chain);
    expect(pyJsonDumps(open)).toBe(oraclePyJsonDumps([plain(), frozen()], 2));
  });

  it('claimedTasks: a frozen tasks array keeps its record aside, and the record follows task accept', () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 5 });
    const scan = (ts: readonly Task[]) => ids(ts.filter((t) => t.owned || t.status !== 'market'));
    const frozen = Object.freeze(sim.state.tasks.slice()) as Task[];
    expect(ids(claimedTasks({ tasks: frozen }))).toEqual(scan(frozen));
    expect(claimedTasks({ tasks: frozen })).toBe(claimedTasks({ tasks: frozen }));
    expect(Object.keys(sim.state.tasks).length).toBe(sim.state.tasks.length);
    const listed = sim.execute('market browse --limit 1').value as { tasks: { task_id: string }[] };
    expect(ids(claimedTasks(sim.state))).toEqual(scan(sim.state.tasks));
    sim.execute(`task accept --task-id ${(listed.tasks[0] as { task_id: string }).task_id}`);
    expect(ids(claimedTasks(sim.state))).toEqual(scan(sim.state.tasks));
    expect(Object.keys(sim.state.tasks).length).toBe(sim.state.tasks.length);
    expect(JSON.parse(JSON.stringify(sim.state.tasks))).toEqual(sim.state.tasks.map((t) => JSON.parse(JSON.stringify(t)) as unknown));
    // claimAccepted on a frozen array leaves a current record current.
    const before = claimedTasks({ tasks: frozen });
    claimAccepted(frozen, frozen[0] as Task, frozen.length);
    expect(claimedTasks({ tasks: frozen })).toBe(before);
  });

  it("a world's market index by title is its world template's, shared by its simulations, as an index taken afresh", () => {
    const cfg = loadPreset('default');
    const sim = Simulation.create(cfg, { seed: 11 });
    const titles = sim.memos.world?.titles as ReadonlyMap<string, readonly number[]>;
    const fresh = new Map<string, number[]>();
    sim.state.tasks.forEach((t, id) => fresh.set(t.title, [...(fresh.get(t.title) ?? []), id]));
    expect(new Map([...titles].map(([k, v]) => [k, [...v]]))).toEqual(fresh);
    const other = Simulation.create(cfg, { seed: 11 });
    if (other.memos.world === sim.memos.world) expect(other.memos.world?.titles).toBe(titles);
    // Tasks added since (replacements) are the simulation's own: the world's index is unchanged.
    const listed = sim.execute('market browse --limit 1').value as { tasks: { task_id: string; title: string }[] };
    sim.execute(`task accept --task-id ${(listed.tasks[0] as { task_id: string }).task_id}`);
    const added = sim.state.tasks[sim.state.tasks.length - 1] as Task;
    expect(sim.memos.world?.titles).toBe(titles);
    expect(titles.get(added.title) ?? []).not.toContain(added.id);
    const restored = Simulation.restore(sim.snapshot());
    for (const t of [added, sim.state.tasks[0] as Task]) {
      const ref = `task inspect --task-id ${JSON.stringify(t.title)}`;
      expect(pyJsonDumps(sim.execute(ref).value as Out)).toBe(pyJsonDumps(restored.execute(ref).value as Out));
    }
  });

  it("task assign's employees by name are the simulation's memo, for its employee list, and find what a scan finds", () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 4 });
    const restored = Simulation.restore(sim.snapshot());
    const listed = sim.execute('market browse --limit 1').value as { tasks: { task_id: string }[] };
    const id = (listed.tasks[0] as { task_id: string }).task_id;
    for (const s of [sim, restored]) s.execute(`task accept --task-id ${id}`);
    expect(sim.memos.employees).toBeNull();
    const names = sim.state.employees.map((e) => e.name);
    const line = `task assign --task-id ${id} --employees ${JSON.stringify([names[2], names[0], 'Nobody', names[0]].join(','))}`;
    const ran = sim.execute(line);
    expect(sim.memos.employees?.list).toBe(sim.state.employees);
    expect(sim.memos.employees?.byName.get(names[2] as string)).toBe(sim.state.employees.find((e) => e.name === names[2]));
    expect(pyJsonDumps(ran.value as Out)).toBe(pyJsonDumps(restored.execute(line).value as Out));
    const again = `task assign --task-id ${id} --employees ${JSON.stringify(names.slice(1, 4).join(','))}`;
    expect(pyJsonDumps(sim.execute(again).value as Out)).toBe(pyJsonDumps(restored.execute(again).value as Out));
    expect(restored.memos.employees?.list).toBe(restored.state.employees);
  });

  it('clientsByName keeps its order on the clients array (unseen by keys, copies and JSON), a frozen array aside, as a fresh sort', () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 9 });
    const clients = sim.state.clients;
    const sortedAfresh = (cs: readonly Client[]) => [...cs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const sorted = clientsByName(clients);
    expect(sorted).toEqual(sortedAfresh(clients));
    expect(clientsByName(clients)).toBe(sorted);
    expect(Object.getOwnPropertySymbols(clients).length).toBe(1);
    expect(Object.keys(clients)).toEqual(clients.map((_, i) => String(i)));
    expect(Object.getOwnPropertySymbols([...clients])).toEqual([]);
    expect(JSON.stringify(clients)).toBe(JSON.stringify(clients.slice()));
    // A rename takes a new order (the same array is kept while nothing changed).
    const renamed = clients[0] as Client;
    (renamed as { name: string }).name = 'Aaa First';
    const after = clientsByName(clients);
    expect(after).not.toBe(sorted);
    expect(after).toEqual(sortedAfresh(clients));
    const frozen = Object.freeze(clients.slice());
    expect(clientsByName(frozen)).toEqual(sortedAfresh(frozen));
    expect(clientsByName(frozen)).toBe(clientsByName(frozen));
    expect(Object.getOwnPropertySymbols(frozen)).toEqual([]);
  });
});

import { parentPort, workerData } from 'node:worker_threads';
import { SharedTable, type SharedTableMemory } from '../../core/threads/shared-table.ts';

// A thread of test/threads.test.ts: adds 1 to one entry's field `rounds` times, each under the
// table's lock, as the rate limiter does, then says it is done.
const { memory, rounds } = workerData as { memory: SharedTableMemory; rounds: number };
const table = SharedTable.attach(memory, 1);
for (let i = 0; i < rounds; i++) {
  table.locked(() => {
    const slot = table.insert('counter');
    table.values[slot] = table.values[slot]! + 1;
  });
}
parentPort!.postMessage('done');

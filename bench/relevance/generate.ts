import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The labelled relevance set for memory retrieval (docs/memory.md explains its design and its
 * limits). A seeded generator, so the set is the same on every machine and nothing generated is
 * committed: `node --import tsx bench/relevance/generate.ts [outDir]` writes it as JSON lines.
 *
 * The world: operational events. Each event is one situation (a latency spike, a budget overrun,
 * a leaked credential, …) happening to one internal system (an invented code name, as real
 * systems have: words no word-vector model knows) in one region, with a cause and a response.
 * Each event leaves three memory items:
 *
 *   report    the system's name, the situation, the region and the cause;
 *   ticket    the system's name and the situation in other words;
 *   follow-up what was done, linked to the report (`follows`), naming neither system nor situation.
 *
 * A query describes an event the way someone looking for it would: the situation in words of
 * their own (synonyms, not the documents' phrasing) and, usually, the system's name or the region.
 * Its relevant items are the event's report and ticket (grade 2) and follow-up (grade 1).
 *
 * Why no single signal suffices (by design, and as in real memory): each system has many events
 * and each situation happens to many systems, so the name alone (what BM25 matches) and the
 * meaning alone (what embeddings match) each leave many candidates; follow-ups share neither and
 * are reachable only through their link.
 */
export interface RelevanceItem {
  namespace: string;
  key: string;
  text: string;
  links: Array<{ to: string; relation: string }>;
}

export interface RelevanceQuery {
  id: string;
  query: string;
  split: 'dev' | 'test';
  /** `namespace:key` → grade (2 highly relevant, 1 relevant). */
  relevant: Record<string, number>;
}

export interface RelevanceSet {
  items: RelevanceItem[];
  queries: RelevanceQuery[];
}

/** Each situation: three ways a document words it, two ways a person asks about it. */
const SITUATIONS: Array<{ doc: string[]; ask: string[] }> = [
  { doc: ['response times climbed sharply', 'p99 latency spiked well above target', 'requests became very slow'], ask: ['sluggish responses', 'slowdown in page loads'] },
  { doc: ['the service was down for two hours', 'a full outage hit all customers', 'nothing answered requests during the outage'], ask: ['downtime', 'service unavailable, offline'] },
  { doc: ['spending exceeded the approved budget', 'costs ran over the quarterly allocation', 'the budget was overspent'], ask: ['overrun on expenses', 'went over the money we planned'] },
  { doc: ['an access token was exposed in a public repository', 'a secret key leaked in the logs', 'credentials were published by mistake'], ask: ['password disclosure', 'leaked login secrets'] },
  { doc: ['the database ran out of disk space', 'storage filled up completely', 'volumes reached full capacity'], ask: ['no room left on the drives', 'storage exhausted'] },
  { doc: ['certificates expired and connections failed', 'the TLS certificate lapsed', 'an expired certificate broke handshakes'], ask: ['ssl cert renewal missed', 'https broke because the cert ran out'] },
  { doc: ['a vendor invoice was paid twice', 'duplicate payment sent to a supplier', 'the same bill was settled two times'], ask: ['double charge to a contractor', 'paid a supplier again by error'] },
  { doc: ['memory usage kept growing until the process crashed', 'a memory leak exhausted the heap', 'RAM consumption grew without bound'], ask: ['leaking memory and restarts', 'heap keeps growing'] },
  { doc: ['a phishing email tricked staff into signing in', 'employees entered passwords on a fake page', 'a spoofed message harvested logins'], ask: ['scam mail stole accounts', 'fraudulent email attack'] },
  { doc: ['the nightly backup did not complete', 'backups silently failed for a week', 'snapshot jobs stopped running'], ask: ['missing backup copies', 'archive job broken'] },
  { doc: ['error rates jumped after the release', 'the new version returned many server errors', 'failures surged following the rollout'], ask: ['bad deploy causing 500s', 'launch introduced bugs'] },
  { doc: ['a hiring freeze was announced for the team', 'recruiting was paused until next year', 'no new positions may be opened'], ask: ['stop recruiting staff', 'halt on new hires'] },
  { doc: ['the contract renewal deadline was missed', 'the agreement lapsed without renewal', 'nobody renewed the license in time'], ask: ['forgot to extend the deal', 'subscription expired unnoticed'] },
  { doc: ['customer data was exported without approval', 'a bulk download of personal records happened', 'private user information was copied out'], ask: ['privacy breach', 'unauthorized data exfiltration'] },
  { doc: ['the message queue backed up for hours', 'consumers fell far behind the queue', 'a large backlog of jobs accumulated'], ask: ['processing delays piling up', 'lagging workers'] },
  { doc: ['DNS records pointed to the wrong address', 'name resolution failed for the domain', 'a bad DNS change broke lookups'], ask: ['hostname not resolving', 'domain lookup problems'] },
  { doc: ['cloud bills doubled this month', 'compute charges rose unexpectedly', 'the infrastructure invoice spiked'], ask: ['hosting costs exploded', 'expensive servers surprise'] },
  { doc: ['an audit found missing access reviews', 'auditors flagged unreviewed permissions', 'the compliance check failed on access control'], ask: ['regulatory finding', 'failed inspection on permissions'] },
  { doc: ['a key engineer resigned unexpectedly', 'the team lead handed in notice', 'a senior developer left the company'], ask: ['staff departure', 'someone quit'] },
  { doc: ['the search index returned stale results', 'indexing lagged and results were outdated', 'search showed old content'], ask: ['out of date lookup results', 'search not refreshing'] },
  { doc: ['a denial of service attack flooded the gateway', 'traffic from a botnet overwhelmed the edge', 'a flood of malicious requests saturated bandwidth'], ask: ['ddos', 'hostile traffic surge'] },
  { doc: ['the mobile app crashed on launch', 'users reported the app closing at startup', 'the application failed to open on phones'], ask: ['app keeps quitting', 'smartphone client crashing'] },
  { doc: ['sales missed the quarterly target', 'revenue came in below forecast', 'bookings fell short of plan'], ask: ['weak income numbers', 'didn\'t hit the sales goal'] },
  { doc: ['a configuration change disabled authentication', 'login checks were turned off by a bad setting', 'a misconfiguration let anyone in'], ask: ['security settings mistake', 'auth bypass from config'] },
  { doc: ['the data pipeline produced duplicate rows', 'records were loaded twice into the warehouse', 'the ETL job double counted events'], ask: ['repeated entries in reports', 'analytics numbers inflated'] },
  { doc: ['a laptop with company files was stolen', 'an employee lost a device holding data', 'a notebook computer went missing'], ask: ['stolen computer', 'lost hardware with sensitive files'] },
  { doc: ['the payroll run was delayed', 'salaries were paid late this month', 'employees received wages after the due date'], ask: ['late paychecks', 'compensation not on time'] },
  { doc: ['third party dependency had a critical vulnerability', 'a library was found exploitable', 'an open source package needed an urgent patch'], ask: ['security flaw in a component', 'cve in a dependency'] },
  { doc: ['customers complained about incorrect invoices', 'billing amounts were wrong for many accounts', 'charges on statements did not match usage'], ask: ['billing mistakes', 'wrong amounts charged'] },
  { doc: ['the office network was unreachable', 'wifi and wired connections dropped', 'staff could not connect to the internet'], ask: ['connectivity lost at the site', 'internet down for employees'] },
  { doc: ['a shipment to a key customer was delayed', 'deliveries arrived weeks late', 'the order left the warehouse behind schedule'], ask: ['late delivery', 'logistics hold up'] },
  { doc: ['replication between databases stopped', 'the replica fell out of sync', 'followers no longer received updates'], ask: ['copies diverged', 'sync broken between data stores'] },
];

const REGIONS = ['frankfurt', 'dublin', 'virginia', 'oregon', 'singapore', 'tokyo', 'sydney', 'mumbai', 'saopaulo', 'toronto', 'stockholm', 'paris'];
const CAUSES = [
  'a change made without review',
  'an expired maintenance window',
  'a misread alert threshold',
  'a manual step skipped during handover',
  'an untested migration script',
  'a capacity estimate that was too low',
  'a vendor side defect',
  'a typo in an automation rule',
];
const ACTIONS = [
  'rolled back the change and added a review step',
  'added monitoring and a runbook entry',
  'scheduled training for the on call rotation',
  'opened a ticket with the vendor and tracked it weekly',
  'wrote a postmortem and assigned owners',
  'increased capacity and set a new alert',
  'automated the manual step',
  'froze similar changes until the fix shipped',
];
const PEOPLE = ['amara', 'bjorn', 'chen', 'dolores', 'emeka', 'farah', 'goran', 'hiroko', 'ines', 'jonas'];

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Invented system names: pronounceable, unknown to any word-vector vocabulary. */
function codenames(random: () => number, count: number): string[] {
  const onsets = ['zor', 'kel', 'vox', 'quil', 'draz', 'myr', 'thal', 'brix', 'nov', 'pex', 'sarn', 'yll', 'grev', 'oss', 'fen'];
  const codas = ['ax', 'ion', 'ith', 'una', 'ek', 'orra', 'ix', 'ane', 'ulo', 'env'];
  const names = new Set<string>();
  while (names.size < count) names.add(`${onsets[Math.floor(random() * onsets.length)]}${codas[Math.floor(random() * codas.length)]}${Math.floor(random() * 90 + 10)}`);
  return [...names];
}

export function generateRelevanceSet(seed = 7, events = 1800, queries = 300): RelevanceSet {
  const random = mulberry32(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const systems = codenames(random, 60);
  const items: RelevanceItem[] = [];
  const world: Array<{ system: string; situation: number; region: string; keys: string[] }> = [];
  for (let e = 0; e < events; e++) {
    const system = pick(systems);
    const situation = Math.floor(random() * SITUATIONS.length);
    const region = pick(REGIONS);
    const [first, second] = shuffle(random, [0, 1, 2]);
    const words = SITUATIONS[situation]!.doc;
    const report = `ev${e}-report`;
    const ticket = `ev${e}-ticket`;
    const followUp = `ev${e}-followup`;
    items.push({
      namespace: 'reports',
      key: report,
      text: `Incident report: on ${system} in ${region}, ${words[first!]}. Root cause was ${pick(CAUSES)}.`,
      links: [],
    });
    items.push({ namespace: 'tickets', key: ticket, text: `Ticket for ${system}: ${words[second!]}. Reported by ${pick(PEOPLE)}.`, links: [{ to: `reports:${report}`, relation: 'about' }] });
    items.push({
      namespace: 'notes',
      key: followUp,
      text: `Follow-up: the team ${pick(ACTIONS)}. Owner ${pick(PEOPLE)}, due in ${Math.floor(random() * 8 + 1)} weeks.`,
      links: [{ to: `reports:${report}`, relation: 'follows' }],
    });
    world.push({ system, situation, region, keys: [report, ticket, followUp] });
  }
  const asked: RelevanceQuery[] = [];
  const chosen = shuffle(random, world.map((_, i) => i)).slice(0, queries);
  chosen.forEach((e, n) => {
    const event = world[e]!;
    const ask = pick(SITUATIONS[event.situation]!.ask);
    const style = random();
    const query = style < 0.6 ? `${ask} on ${event.system}` : style < 0.85 ? `${event.system} ${ask} in ${event.region}` : `${ask} in ${event.region}`;
    // Other events identical in everything the query says are as relevant as the one it was drawn from.
    const matches = world.filter(
      (other) => other.situation === event.situation && (style < 0.85 ? other.system === event.system : true) && (style < 0.6 || other.region === event.region),
    );
    const relevant: Record<string, number> = {};
    for (const match of matches) {
      relevant[`reports:${match.keys[0]}`] = 2;
      relevant[`tickets:${match.keys[1]}`] = 2;
      relevant[`notes:${match.keys[2]}`] = 1;
    }
    asked.push({ id: `q${n}`, query, split: n % 5 < 2 ? 'dev' : 'test', relevant });
  });
  return { items, queries: asked };
}

function shuffle<T>(random: () => number, list: T[]): T[] {
  const copy = [...list];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const out = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), 'data');
  const set = generateRelevanceSet();
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'corpus.jsonl'), set.items.map((item) => JSON.stringify(item)).join('\n') + '\n');
  writeFileSync(join(out, 'queries.jsonl'), set.queries.map((query) => JSON.stringify(query)).join('\n') + '\n');
  console.log(`${set.items.length} items, ${set.queries.length} queries (${set.queries.filter((q) => q.split === 'dev').length} dev) → ${out}`);
}

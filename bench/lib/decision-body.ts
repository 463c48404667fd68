/**
 * The decision the HTTP scenarios create: decision-gate-v1 with a little context and two inputs,
 * so that `decisions` and `signatures` measure the same request and their figures compare.
 */
export const DECISION_BODY = JSON.stringify({
  title: 'Deploy web to canary',
  policy: 'decision-gate-v1',
  context: [
    { source: 'risk:score', value: 12 },
    { source: 'deploy:replicas', value: 3 },
  ],
  inputs: ['repo:web', 'ticket:OPS-1234'],
});

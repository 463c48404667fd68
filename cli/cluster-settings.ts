import type { ClusterOptions } from '../core/cluster/cluster-link.ts';

/**
 * Cluster mode's settings, which `serve` and `audit verify --nats` share, when NATS URLs are
 * given: URLs and namespace from flags or variables; node id, replicas, credentials and TLS
 * files from GATEHOUSE_NATS_* variables.
 */
export function clusterSettings(urls: string | undefined, namespace: string | undefined, env: NodeJS.ProcessEnv): ClusterOptions | undefined {
  const servers = (urls ?? '').split(',').map((url) => url.trim()).filter(Boolean);
  if (servers.length === 0) return undefined;
  for (const url of servers) {
    if (!/^(nats|tls):\/\/[^/\s]+$|^[^/\s:]+:\d+$/.test(url)) throw new Error(`--nats takes nats://host:port URLs separated by commas, got '${url}'`);
  }
  const tls = env.GATEHOUSE_NATS_CA || env.GATEHOUSE_NATS_CERT ? { caFile: env.GATEHOUSE_NATS_CA, certFile: env.GATEHOUSE_NATS_CERT, keyFile: env.GATEHOUSE_NATS_KEY } : null;
  const replicas = env.GATEHOUSE_NATS_REPLICAS;
  return {
    servers,
    ...(env.GATEHOUSE_NODE_ID ? { nodeId: env.GATEHOUSE_NODE_ID } : {}),
    ...(namespace ? { namespace } : {}),
    ...(replicas ? { replicas: replicaCount(replicas) } : {}),
    ...(env.GATEHOUSE_NATS_USER ? { user: env.GATEHOUSE_NATS_USER, pass: env.GATEHOUSE_NATS_PASSWORD } : {}),
    ...(env.GATEHOUSE_NATS_TOKEN ? { token: env.GATEHOUSE_NATS_TOKEN } : {}),
    tls,
  };
}

function replicaCount(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > 5) throw new Error(`GATEHOUSE_NATS_REPLICAS must be an integer from 1 to 5, got '${text}'`);
  return value;
}

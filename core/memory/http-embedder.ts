import { normalise, type Embedder } from './embedder.ts';

/**
 * An embedding service over HTTP, for production deployments that run a larger model beside
 * Gatehouse. It speaks the widely implemented OpenAI-style protocol:
 *
 *   POST <url>  {"model": "<model>", "input": ["text", …]}
 *   200         {"data": [{"index": 0, "embedding": [0.1, …]}, …]}
 *
 * (OpenAI, Azure OpenAI, Ollama's /v1/embeddings, vLLM, text-embeddings-inference, LocalAI.)
 * Vectors are normalised here, so any service's output works with dot-product search. Configure
 * it with `gatehouse serve --embedder http` and GATEHOUSE_EMBEDDER_URL / _MODEL / _DIMENSIONS /
 * _API_KEY (docs/memory.md).
 */
export interface HttpEmbedderOptions {
  url: string;
  model: string;
  dimensions: number;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  timeoutMs?: number;
}

export class HttpEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;

  constructor(private readonly options: HttpEmbedderOptions) {
    this.id = `http/${options.model}`;
    this.dimensions = options.dimensions;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const response = await fetch(this.options.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: this.options.model, input: texts }),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
    });
    if (!response.ok) throw new Error(`embedding service answered ${response.status}`);
    const body = (await response.json()) as { data?: Array<{ index?: number; embedding?: unknown }> };
    if (!Array.isArray(body.data) || body.data.length !== texts.length) throw new Error(`embedding service returned ${body.data?.length ?? 'no'} vectors for ${texts.length} texts`);
    const vectors: Float32Array[] = new Array(texts.length);
    body.data.forEach((entry, position) => {
      const embedding = entry.embedding;
      if (!Array.isArray(embedding) || embedding.length !== this.dimensions || !embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) {
        throw new Error(`embedding service returned a vector that is not ${this.dimensions} finite numbers`);
      }
      vectors[entry.index ?? position] = normalise(Float32Array.from(embedding as number[]));
    });
    return vectors;
  }
}

/**
 * The HTTP embedder configured by GATEHOUSE_EMBEDDER_URL, _MODEL, _DIMENSIONS and _API_KEY, or
 * undefined when no URL is set (the offline word-vector model is used then).
 */
export function httpEmbedderFromEnv(env: NodeJS.ProcessEnv): HttpEmbedder | undefined {
  const url = env.GATEHOUSE_EMBEDDER_URL;
  if (!url) return undefined;
  if (!/^https?:\/\//.test(url)) throw new Error(`GATEHOUSE_EMBEDDER_URL must be an http(s) URL, got '${url}'`);
  const dimensions = Number(env.GATEHOUSE_EMBEDDER_DIMENSIONS);
  if (!Number.isInteger(dimensions) || dimensions < 1) throw new Error('GATEHOUSE_EMBEDDER_DIMENSIONS must be set to the model’s vector size when GATEHOUSE_EMBEDDER_URL is');
  const model = env.GATEHOUSE_EMBEDDER_MODEL;
  if (!model) throw new Error('GATEHOUSE_EMBEDDER_MODEL must name the model when GATEHOUSE_EMBEDDER_URL is set');
  return new HttpEmbedder({ url, model, dimensions, apiKey: env.GATEHOUSE_EMBEDDER_API_KEY || undefined });
}

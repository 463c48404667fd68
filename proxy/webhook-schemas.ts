import { Type, type Static } from '@sinclair/typebox';
import { Id } from './id-schema.ts';
import { Nullable } from './schemas.ts';

/**
 * Schemas of the webhook configuration API (proxy/routes/webhooks.ts): they validate requests
 * and describe responses in the OpenAPI document.
 */

/** An event kind (`decision.created`), a family (`decision.*`) or `*` for every event. */
export const EventPattern = Type.String({ pattern: '^(\\*|[a-z_]+\\.\\*|[a-z_]+\\.[a-z_]+)$', maxLength: 128, examples: ['decision.*'] });

const Url = Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://', description: 'An http(s) URL that resolves to a public address (or one allowed by GATEHOUSE_WEBHOOK_ALLOW).' });
const Events = Type.Array(EventPattern, { minItems: 1, maxItems: 64, uniqueItems: true });
const Description = Type.String({ maxLength: 512 });

export const CreateWebhookBody = Type.Object({ url: Url, events: Events, description: Type.Optional(Description) }, { additionalProperties: false });
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Nullable(Description)),
    enabled: Type.Optional(Type.Boolean({ description: 'Enabling resets the failure run and retries the next delivery at once.' })),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateWebhookBody = Static<typeof UpdateWebhookBody>;

/** At most a week: a rotated-out secret should not linger. */
export const RotateSecretBody = Type.Object(
  { graceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 7 * 24 * 3600, description: 'How long the previous secret keeps signing (default 24 h).' })) },
  { additionalProperties: false },
);
export type RotateSecretBody = Static<typeof RotateSecretBody>;

export const ListDeliveriesQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
    cursor: Type.Optional(Id({ pattern: '^dlv_[0-9a-z]+$', description: 'The `nextCursor` of the previous page.' })),
  },
  { additionalProperties: false },
);
export type ListDeliveriesQuery = Static<typeof ListDeliveriesQuery>;

export const WebhookEndpoint = Type.Object({
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Nullable(Type.String()),
  enabled: Type.Boolean(),
  disabledReason: Nullable(Type.String()),
  consecutiveFailures: Type.Integer(),
  createdBy: Type.String(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  secretRotatedAt: Type.String(),
  previousSecretExpiresAt: Nullable(Type.String()),
});

export const WebhookEndpointWithSecret = Type.Intersect([
  WebhookEndpoint,
  Type.Object({ secret: Type.String({ description: 'The signing secret (`whsec_…`), shown only in this response.' }) }),
]);

export const WebhookEndpointList = Type.Object({ data: Type.Array(WebhookEndpoint) });

export const Delivery = Type.Object({
  id: Type.String(),
  endpointId: Type.String(),
  messageId: Type.String({ description: 'The `webhook-id` header: the same on every retry and replay.' }),
  kind: Type.String(),
  cursor: Nullable(Type.Integer()),
  payload: Type.String({ description: 'The exact body sent.' }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  attempts: Type.Array(
    Type.Object({
      at: Type.String(),
      status: Nullable(Type.Integer()),
      latencyMs: Type.Number(),
      error: Nullable(Type.String()),
      response: Nullable(Type.String({ description: 'The first KiB of the response body.' })),
    }),
  ),
  nextAttemptAt: Nullable(Type.String()),
  createdAt: Type.String(),
  replayOf: Nullable(Type.String()),
});

export const DeliveryPage = Type.Object({ data: Type.Array(Delivery), nextCursor: Nullable(Type.String()) });

export { createFleetClient, type FleetClient, type FleetClientOptions } from './client.ts';
export { FleetApiError, ok } from './errors.ts';
export type { EventFeed, FeedQuery, FollowOptions } from './events.ts';
export type { Paginators } from './paging.ts';
export { DEFAULT_RETRY, isRepeatableTelemetry, parseRetryAfter, type RetryOptions } from './retry.ts';
export {
  LiveStream, StreamClosedError,
  type BatteryMessage, type ConnectedMessage, type DataMessage, type DiagnosticsMessage, type ErrorMessage, type EventMessage,
  type LocationMessage, type OpenStreamOptions, type ReconnectOptions, type SocketConstructor, type SocketLike, type StatusMessage,
  type StreamMessage, type SubscriptionsMessage,
} from './stream.ts';
export * from './types.ts';
export {
  verifyWebhook, WebhookVerificationError,
  type VerifyWebhookOptions, type WebhookHeaders, type WebhookVerificationFailure,
} from './webhooks.ts';

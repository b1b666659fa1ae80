// Package notify tells people when Applications and ApplicationSets change state.
//
// It holds the pure parts of navarch's notifications and the delivery queue:
//
//   - Parse reads the configuration (the ConfigMap and Secret navarch-notifications of the
//     controller's namespace) into destinations and subscriptions, with errors that name the
//     field;
//   - a Tracker compares each object's previous observed state with the new one, by UID, and
//     returns the transitions (Trigger values): one per change, never one per reconcile;
//   - a Selector decides which subscriptions an object's transition concerns;
//   - a Notifier turns transitions into deliveries to webhooks, Slack-compatible incoming
//     webhooks and Kubernetes Events, on a bounded queue with its own workers, retried with
//     backoff, counted in metrics and logged.
//
// The controller feeds a Notifier from its informers (internal/controller/notifications.go)
// and reloads its configuration when the ConfigMap or the Secret changes. docs/notifications.md
// is the user guide.
package notify

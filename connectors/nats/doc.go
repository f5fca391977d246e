// Package nats is the 'nats' connector: a NATS JetStream source and sink
// (github.com/nats-io/nats.go and its jetstream package).
//
// Source: WITH (connector = 'nats', server = 'nats://127.0.0.1:4222',
// stream = 'S', subject = 'orders.>' (optional filter), user/password or
// token, on_error, scan.startup.mode = 'earliest' | 'latest') FORMAT PLAIN
// ENCODE JSON | CSV, one record per message. It reads through an ordered
// consumer (ephemeral, in stream order, re-created by the client after a
// gap or a reconnect) and keeps the stream sequence of the last message it
// handed to the engine as its checkpointed position, so after a crash it
// starts again at the next sequence: replayable, exactly once, as long as
// the stream still holds those messages (a stream whose retention removed
// them is reported, not skipped silently: the consumer starts at the first
// message still there and the source fails with the gap).
//
// Sink: WITH (connector = 'nats', server, subject, user/password or token)
// FORMAT PLAIN ENCODE JSON | CSV (append-only input) or FORMAT DEBEZIUM
// ENCODE JSON. Each change is one message published to JetStream with the
// header Nats-Msg-Id = "sluice/<sink id>/<epoch>/<index>" and Sluice-Epoch
// = "<epoch>" (the last message of an epoch also Sluice-Epoch-End: true);
// Write returns once the stream acknowledged every message. A repeated
// epoch (a failed Write retried, or a replay after a crash) is dropped by
// JetStream's de-duplication as long as it comes within the stream's
// duplicate window (Duplicates, two minutes by default). After a restart
// LastEpoch reads the last message of the subject: an epoch whose end
// marker is in the stream is never published again, whatever the window.
// Beyond the window only one case duplicates: an epoch published in part
// before a crash and replayed after the window passed repeats its first
// part. SHOW SINKS says EXACTLY_ONCE; README states this limit. The
// subject must be the sink's own (another publisher's last message hides
// the end marker, and then the window alone protects).
//
// It imports exec/connector, the sql leaf packages, connectors/internal
// and the nats.go client.
package nats

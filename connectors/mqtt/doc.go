// Package mqtt is the 'mqtt' connector: an MQTT source and sink
// (github.com/eclipse/paho.mqtt.golang, MQTT 3.1.1).
//
// Source: WITH (connector = 'mqtt', server = 'tcp://127.0.0.1:1883',
// topic = 'sensors/#', qos = '1', username, password, client.id, on_error)
// FORMAT PLAIN ENCODE JSON | CSV, one record per message. MQTT keeps no
// log a subscriber could seek in, and the client acknowledges a QoS 1
// message once it is handed to Sluice, before the checkpoint that covers
// it: what was read after the last checkpoint is lost in a crash, and
// what is published while the connection is down is never seen. The
// source is therefore AT MOST ONCE: its factory is connector.Unreplayable,
// so SHOW SINKS names it as the weakest link of every pipeline reading it,
// and a sink over it that declares a stronger delivery is refused.
//
// Sink: WITH (connector = 'mqtt', server, topic, qos = '1', retain =
// 'false', username, password, client.id) FORMAT PLAIN ENCODE JSON | CSV
// (append-only input) or FORMAT DEBEZIUM ENCODE JSON. Each change is one
// message; Write returns once the broker acknowledged every message (QoS
// 1). MQTT has no transactions and no de-duplication, so an epoch written
// again (a retry after a failure, a replay after a crash) is published
// again: the sink is AT LEAST ONCE (QoS 0: AT MOST ONCE).
//
// It imports exec/connector, the sql leaf packages, connectors/internal
// and the paho client.
package mqtt

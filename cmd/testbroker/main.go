// Command testbroker runs an in-process Kafka broker (franz-go's kfake)
// for the crash tests: its log lives in --data-dir with every produce
// fsynced before it is acknowledged, so records survive killing and
// restarting the broker process, as they would with a real broker.
//
//	testbroker --listen 127.0.0.1:PORT --data-dir DIR [--partitions N] [--topics a,b]
//	           [--sasl MECHANISM:USER:PASSWORD,…] [--tls-cert FILE --tls-key FILE]
//
// It prints "listening on ADDR" on stdout once it accepts connections and
// runs until SIGTERM or SIGINT. Topics are created on first use (with
// --partitions partitions); --topics creates some at the first start.
// Restarted on the same --data-dir it reloads its topics, records,
// producer ids and transactions.
//
// --sasl requires SASL authentication (PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512) with the users given; --tls-cert and --tls-key make the
// listener TLS with that PEM certificate and key: together, SASL_SSL.
package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "testbroker:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("testbroker", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9092", "address to listen on (port 0 picks one)")
	dataDir := fs.String("data-dir", "", "directory of the broker's log (required)")
	partitions := fs.Int("partitions", 1, "partitions of created topics")
	topics := fs.String("topics", "", "comma-separated topics to create at the first start")
	sasl := fs.String("sasl", "", "comma-separated MECHANISM:USER:PASSWORD users; SASL is required when given")
	tlsCert := fs.String("tls-cert", "", "PEM certificate of a TLS listener (with --tls-key)")
	tlsKey := fs.String("tls-key", "", "PEM key of --tls-cert")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dataDir == "" {
		return fmt.Errorf("--data-dir is required")
	}
	if *partitions < 1 {
		return fmt.Errorf("--partitions must be at least 1")
	}
	_, portText, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("--listen: %v", err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("--listen: bad port %q", portText)
	}
	opts := []kfake.Opt{
		kfake.Ports(port),
		// kfake listens on 127.0.0.1; honour the host given.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, *listen) }),
		kfake.DataDir(*dataDir),
		kfake.SyncWrites(),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*partitions),
	}
	if *sasl != "" {
		opts = append(opts, kfake.EnableSASL())
		for _, u := range strings.Split(*sasl, ",") {
			parts := strings.SplitN(u, ":", 3)
			if len(parts) != 3 {
				return fmt.Errorf("--sasl: %q is not MECHANISM:USER:PASSWORD", u)
			}
			opts = append(opts, kfake.Superuser(parts[0], parts[1], parts[2]))
		}
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together")
	}
	if *tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert: %v", err)
		}
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}))
	}
	var seed []string
	for _, t := range strings.Split(*topics, ",") {
		if t = strings.TrimSpace(t); t != "" {
			seed = append(seed, t)
		}
	}
	if len(seed) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(*partitions), seed...))
	}
	// Catch signals before announcing readiness, so that a supervisor
	// that stops us right after the line is never too early.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	durableAutoCreate(c, int32(*partitions))
	fmt.Printf("listening on %s\n", c.ListenAddrs()[0])
	<-sig
	c.Close()
	return nil
}

// durableAutoCreate makes topics created on first use durable. kfake's
// own auto-creation (in its Metadata handler) does not write the topic
// list to the data directory, so a broker killed afterwards would come
// back without the topic. Instead, a Metadata request that may create
// topics first creates the missing ones through Cluster.CreateTopic,
// which persists them, and then runs as usual.
func durableAutoCreate(c *kfake.Cluster, partitions int32) {
	var known sync.Map // topic name -> struct{}
	c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req, ok := kreq.(*kmsg.MetadataRequest)
		if !ok || (req.Version >= 4 && !req.AllowAutoTopicCreation) {
			return nil, nil, false
		}
		var missing []string
		for _, t := range req.Topics {
			if t.Topic == nil || *t.Topic == "" {
				continue
			}
			if _, ok := known.Load(*t.Topic); !ok {
				missing = append(missing, *t.Topic)
			}
		}
		if len(missing) == 0 {
			return nil, nil, false
		}
		// CreateTopic goes through the cluster's loop, which is running
		// this function: sleeping lets the loop run it.
		c.SleepControl(func() {
			for _, t := range missing {
				err := c.CreateTopic(t, partitions, nil)
				if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
					known.Store(t, struct{}{})
				}
			}
		})
		return nil, nil, false // not handled: kfake answers it
	})
}

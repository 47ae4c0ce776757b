package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/natspub"
	"github.com/pgconsole/console/queues/webhookpub"
)

// relayOptions are the outbox relay's flags, shared by serve and worker: a
// process runs a relay when it is given somewhere to publish.
type relayOptions struct {
	natsURL, natsPrefix, natsStream, webhookURL *string
}

// relayFlags registers the relay's flags on fs and their variables in fe.
func relayFlags(fs *flag.FlagSet, fe flagEnv) relayOptions {
	fe["relay-nats-url"] = "CONSOLE_RELAY_NATS_URL"
	fe["relay-nats-subject-prefix"] = "CONSOLE_RELAY_NATS_SUBJECT_PREFIX"
	fe["relay-nats-stream"] = "CONSOLE_RELAY_NATS_STREAM"
	fe["relay-webhook-url"] = "CONSOLE_RELAY_WEBHOOK_URL"
	return relayOptions{
		natsURL:    fs.String("relay-nats-url", "", "publish outbox events to this NATS JetStream server"),
		natsPrefix: fs.String("relay-nats-subject-prefix", "", "subject prefix"),
		natsStream: fs.String("relay-nats-stream", "", "expected JetStream stream"),
		webhookURL: fs.String("relay-webhook-url", "", "POST outbox events to this URL"),
	}
}

// publisher builds the configured publisher; nil when the process runs no
// relay. The returned func closes what it opened.
//
// A NATS server that is down when the process starts does not stop it: the
// connection is made in the background and retried forever, the relay's
// publishes fail (and its events wait, unharmed) until it is up, and
// console_relay_broker_up on reg says which it is. Only a URL that cannot
// work at all (it does not parse) fails the start.
func (o relayOptions) publisher(stdout io.Writer, reg prometheus.Registerer, logger *slog.Logger) (queues.Publisher, func(), error) {
	none := func() {}
	switch {
	case *o.natsURL != "" && *o.webhookURL != "":
		return nil, none, usageError{"give --relay-nats-url or --relay-webhook-url, not both"}
	case *o.natsURL != "":
		nc, err := nats.Connect(*o.natsURL, nats.Name("console-relay"), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second),
			nats.RetryOnFailedConnect(true),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				logger.Warn("outbox relay: NATS connection lost; publishing waits until it is back", "url", *o.natsURL, "err", err)
			}),
			nats.ConnectHandler(func(*nats.Conn) {
				logger.Info("outbox relay: connected to NATS", "url", *o.natsURL)
			}),
			nats.ReconnectHandler(func(*nats.Conn) {
				logger.Info("outbox relay: connected to NATS again", "url", *o.natsURL)
			}))
		if err != nil {
			return nil, none, fmt.Errorf("connect to NATS at %s: %w; check --relay-nats-url", *o.natsURL, err)
		}
		pub, err := natspub.New(nc, natspub.Config{SubjectPrefix: *o.natsPrefix, ExpectStream: *o.natsStream})
		if err != nil {
			nc.Close()
			return nil, none, err
		}
		up := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "console_relay_broker_up",
			Help:        "1 while the outbox relay's broker connection is up, 0 while it is being retried.",
			ConstLabels: prometheus.Labels{"broker": "nats"},
		}, func() float64 {
			if nc.IsConnected() {
				return 1
			}
			return 0
		})
		if reg != nil {
			if err := reg.Register(up); err != nil {
				nc.Close()
				return nil, none, fmt.Errorf("register console_relay_broker_up: %w", err)
			}
		}
		if nc.IsConnected() {
			fmt.Fprintf(stdout, "outbox relay publishing to NATS JetStream at %s\n", *o.natsURL)
		} else {
			fmt.Fprintf(stdout, "outbox relay: NATS at %s is not reachable yet; connecting in the background, events wait until it is\n", *o.natsURL)
		}
		return pub, nc.Close, nil
	case *o.webhookURL != "":
		pub, err := webhookpub.New(webhookpub.Config{URL: *o.webhookURL})
		if err != nil {
			return nil, none, err
		}
		fmt.Fprintf(stdout, "outbox relay posting to %s\n", *o.webhookURL)
		return pub, none, nil
	}
	return nil, none, nil
}

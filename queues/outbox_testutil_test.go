package queues

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// obNATS is a real in-process NATS server with JetStream, restartable on the
// same port and store folder.
type obNATS struct {
	t    testing.TB
	dir  string
	port int
	srv  *server.Server
}

func obStartNATS(t testing.TB) *obNATS {
	t.Helper()
	n := &obNATS{t: t, dir: t.TempDir(), port: -1}
	n.start()
	t.Cleanup(func() { n.srv.Shutdown(); n.srv.WaitForShutdown() })
	return n
}

func (n *obNATS) start() {
	n.t.Helper()
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: n.port, JetStream: true, StoreDir: n.dir,
		NoSigs: true, NoLog: true, ServerName: "outbox-test",
	})
	require.NoError(n.t, err)
	srv.Start()
	require.True(n.t, srv.ReadyForConnections(10*time.Second), "nats server not ready")
	n.srv = srv
	n.port = srv.Addr().(*net.TCPAddr).Port
}

func (n *obNATS) restart() {
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	n.start()
}

func (n *obNATS) url() string { return n.srv.ClientURL() }

// connect returns a client that reconnects forever, closed at cleanup.
func (n *obNATS) connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(n.url(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// stream creates the EVENTS stream on subjects events.> with a duplicate
// window that covers the tests.
func (n *obNATS) stream(t testing.TB, nc *nats.Conn) jetstream.Stream {
	t.Helper()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	s, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: "EVENTS", Subjects: []string{"events.>"}, Storage: jetstream.FileStorage,
		Duplicates: 5 * time.Minute,
	})
	require.NoError(t, err)
	return s
}

// obJetStream is the relay tests' publisher: each event goes to JetStream
// subject events.<topic> with its event id as Nats-Msg-Id. The product's
// publisher (package natspub) imports queues, so the engine's own tests
// cannot use it; natspub's tests run it through a relay.
type obJetStream struct {
	js         jetstream.JetStream
	duplicates atomic.Int64 // republishes JetStream dropped
}

func obPublisher(t testing.TB, nc *nats.Conn) *obJetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return &obJetStream{js: js}
}

func (p *obJetStream) Publish(ctx context.Context, m *OutboxMessage) error {
	msg := &nats.Msg{Subject: "events." + m.Topic, Data: m.Payload}
	ack, err := p.js.PublishMsg(ctx, msg, jetstream.WithMsgID(m.EventID()))
	if err != nil {
		return err
	}
	if ack.Duplicate {
		p.duplicates.Add(1)
	}
	return nil
}

// obStreamIDs reads every message of the stream with an ephemeral consumer
// and counts each Nats-Msg-Id it sees.
// obRequireOnceEach fails the test unless the stream holds each event of
// ids exactly once, and nothing else.
func obRequireOnceEach(t testing.TB, s jetstream.Stream, ids []int64) {
	t.Helper()
	seen := obStreamIDs(t, s)
	for _, id := range ids {
		require.Equal(t, 1, seen[strconv.FormatInt(id, 10)], "event %d: times the consumer received it", id)
	}
	require.Len(t, seen, len(ids), "the consumer received events the outbox does not hold")
}

func obStreamIDs(t testing.TB, s jetstream.Stream) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := s.Info(ctx)
	require.NoError(t, err)
	total := int(info.State.Msgs)
	seen := map[string]int{}
	if total == 0 {
		return seen
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	for got := 0; got < total; {
		batch, err := c.Fetch(min(500, total-got), jetstream.FetchMaxWait(5*time.Second))
		require.NoError(t, err)
		n := 0
		for m := range batch.Messages() {
			seen[m.Headers().Get("Nats-Msg-Id")]++
			n++
		}
		require.NoError(t, batch.Error())
		require.NotZero(t, n, "stream stopped delivering after %d of %d", got, total)
		got += n
	}
	return seen
}

// obEnqueue commits n events on topic in one transaction and returns ids.
func obEnqueue(t testing.TB, pool *pgxpool.Pool, topic string, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	evs := make([]OutboxEvent, n)
	for i := range evs {
		evs[i] = OutboxEvent{Topic: topic, AggregateType: "order", AggregateID: "o-1",
			EventType: "order.created", Payload: map[string]int{"n": i}}
	}
	ids, err := EnqueueEventsTx(ctx, tx, evs)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	return ids
}

// obCountState counts the outbox events in state.
func obCountState(t testing.TB, pool *pgxpool.Pool, state string) int {
	return testdb.Count(t, pool, "SELECT count(*) FROM outbox_events WHERE state = $1", state)
}

// obProxy is a TCP proxy in front of PostgreSQL. When armed, it forwards the
// client's COMMIT (with match set: the execution of a prepared statement
// whose text contains match), lets the server run it to its end, drops the
// server's answer and cuts both connections: the server committed, the
// client only sees its connection break while it waits for the answer.
// With then set, the first cut arms one more, of the next execution of a
// statement whose text contains then.
type obProxy struct {
	ln        net.Listener
	target    string
	match     string // lower case; set before arming
	then      string // lower case; set before arming
	armed     atomic.Bool
	thenArmed atomic.Bool
	cuts      atomic.Int64
	mu        sync.Mutex
	conns     []net.Conn
}

func obStartProxy(t testing.TB, target string) *obProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &obProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return p
}

func (p *obProxy) addr() string { return p.ln.Addr().String() }

func (p *obProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		var cut atomic.Bool
		go serverToClient(s, c, &cut)
		go p.clientToServer(c, s, &cut)
	}
}

// syncMessage is the extended protocol's Sync: the server commits an
// implicit transaction's statement when it reads it.
var syncMessage = []byte{'S', 0, 0, 0, 4}

func (p *obProxy) clientToServer(c, s net.Conn, cut *atomic.Bool) {
	buf := make([]byte, 64<<10)
	matched := map[string]bool{} // names of statements prepared with match
	thens := map[string]bool{}   // names of statements prepared with then
	cutting := false             // the armed statement is on its way
	var tail []byte              // the end of the last chunk, for a Sync split across reads
	for {
		n, err := c.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			// A simple-protocol Query message ('Q') whose text is COMMIT;
			// with match, a Bind ('B': portal, then statement name) of a
			// statement whose Parse ('P': name, then text) held match. The
			// client writes Bind, Execute and Sync together, but a read may
			// return them in parts: the statement is complete once its Sync
			// is forwarded.
			var hit, hitThen bool
			text := strings.ToLower(string(chunk))
			switch {
			case p.match == "":
				hit = chunk[0] == 'Q' && strings.Contains(text, "commit")
			case chunk[0] == 'P' && len(chunk) > 5 && strings.Contains(text, p.match):
				name, _, _ := strings.Cut(string(chunk[5:]), "\x00")
				matched[name] = true
			case chunk[0] == 'P' && len(chunk) > 5 && p.then != "" && strings.Contains(text, p.then):
				name, _, _ := strings.Cut(string(chunk[5:]), "\x00")
				thens[name] = true
			case chunk[0] == 'B' && len(chunk) > 5:
				_, rest, _ := strings.Cut(string(chunk[5:]), "\x00")
				name, _, _ := strings.Cut(rest, "\x00")
				hit, hitThen = matched[name], thens[name]
			}
			if !cutting && ((hit && p.armed.CompareAndSwap(true, false)) || (hitThen && p.thenArmed.CompareAndSwap(true, false))) {
				if hit && p.then != "" {
					p.thenArmed.Store(true)
				}
				p.cuts.Add(1)
				cutting = true
				tail = nil
			}
			last := cutting && (p.match == "" || bytes.Contains(append(tail, chunk...), syncMessage))
			if last {
				// Set before the server can answer: from here on its
				// output is the answer to the cut statement.
				cut.Store(true)
			}
			if _, werr := s.Write(chunk); werr != nil {
				c.Close()
				return
			}
			if last {
				// serverToClient closes both connections once the server
				// has answered. The client sends nothing more until it
				// has its answer.
				return
			}
			tail = append(tail[:0], chunk[max(0, len(chunk)-len(syncMessage)+1):]...)
		}
		if err != nil {
			s.(*net.TCPConn).CloseWrite()
			return
		}
	}
}

// serverToClient forwards the server's output until the cut. From the cut
// on, it reads the server's answer to the cut statement without forwarding
// it, and closes both connections at the answer's ReadyForQuery: the
// server sends that only once the statement's implicit transaction (or the
// COMMIT) has ended, so the commit happens before the client can see the
// cut and start a retry. Closing earlier, as soon as the statement is
// forwarded, would let a retry on another connection overtake a statement
// the server had not yet run.
func serverToClient(s, c net.Conn, cut *atomic.Bool) {
	defer s.Close()
	defer c.Close()
	buf := make([]byte, 64<<10)
	var answer []byte // the dropped answer; the client had read all output before it
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if !cut.Load() {
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			} else {
				answer = append(answer, buf[:n]...)
				if readyForQuery(answer) {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// readyForQuery reports whether b, a run of whole backend messages from a
// message boundary (the last possibly incomplete), holds a ReadyForQuery.
func readyForQuery(b []byte) bool {
	for len(b) >= 5 {
		if b[0] == 'Z' {
			return true
		}
		n := int(binary.BigEndian.Uint32(b[1:5]))
		if n < 4 || len(b) < 1+n {
			return false
		}
		b = b[1+n:]
	}
	return false
}

package queues_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// exampleTB lets the runnable examples get a fresh database from testdb;
// the databases are dropped with the test server.
type exampleTB struct{ testing.TB }

func (exampleTB) Helper()                        {}
func (exampleTB) Cleanup(func())                 {}
func (exampleTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

// examplePool returns a pool on a fresh migrated database, whose
// connections are named "console-worker" (queues.PoolConfig).
func examplePool() *pgxpool.Pool {
	cfg, err := queues.PoolConfig(testdb.URL(exampleTB{}))
	if err != nil {
		panic(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	return pool
}

// A worker process: handlers by kind, queues with concurrency, and a
// graceful stop with a drain deadline. The caller closes the pool last.
func ExampleClient() {
	ctx := context.Background()
	pool := examplePool()
	defer pool.Close()

	client, err := queues.NewClient(pool, queues.ClientConfig{
		Queues:       map[string]queues.QueueConfig{"email": {Concurrency: 4, Timeout: 30 * time.Second}},
		PollInterval: 100 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	sent := make(chan string, 1)
	client.Handle("welcome", func(ctx context.Context, job *queues.Job) error {
		sent <- string(job.Payload)
		return nil
	})
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	if _, err := client.Enqueue(ctx, queues.EnqueueParams{
		Queue: "email", Kind: "welcome", Payload: map[string]string{"to": "ada@example.com"},
	}); err != nil {
		panic(err)
	}
	fmt.Println(<-sent)

	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		panic(err)
	}
	// Output: {"to": "ada@example.com"}
}

// Enqueue in the same transaction as the business write: the job exists if
// and only if the order does.
func ExampleEnqueueTx() {
	ctx := context.Background()
	pool := examplePool()
	defer pool.Close()

	tx, err := pool.Begin(ctx)
	if err != nil {
		panic(err)
	}
	defer tx.Rollback(ctx)
	// ... INSERT INTO orders ... in tx
	job, err := queues.EnqueueTx(ctx, tx, queues.EnqueueParams{
		Queue: "billing", Kind: "charge", Payload: map[string]int{"order": 42},
		DedupeKey: "charge-order-42", MaxAttempts: 5,
	})
	if err != nil {
		panic(err)
	}
	_, err = queues.EnqueueTx(ctx, tx, queues.EnqueueParams{Queue: "billing", Kind: "charge", DedupeKey: "charge-order-42"})
	fmt.Println(job.Status, job.MaxAttempts, errors.Is(err, queues.ErrDuplicate))
	if err := tx.Commit(ctx); err != nil {
		panic(err)
	}
	// Output: ready 5 true
}

// Bulk backfills go through COPY.
func ExampleEnqueueCopy() {
	ctx := context.Background()
	pool := examplePool()
	defer pool.Close()

	ps := make([]queues.EnqueueParams, 1000)
	for i := range ps {
		ps[i] = queues.EnqueueParams{Queue: "reindex", Kind: "noop", Payload: map[string]int{"doc": i}}
	}
	n, err := queues.EnqueueCopy(ctx, pool, ps)
	if err != nil {
		panic(err)
	}
	stats, err := queues.QueueHealth(ctx, pool, queues.QueueHealthParams{})
	if err != nil {
		panic(err)
	}
	fmt.Println(n, stats[0].Queue, stats[0].Ready)
	// Output: 1000 reindex 1000
}

// Permanent errors skip the retries and dead-letter the job at once, with
// an error class that groups similar failures.
func ExamplePermanent() {
	ctx := context.Background()
	pool := examplePool()
	defer pool.Close()

	client, err := queues.NewClient(pool, queues.ClientConfig{
		Queues:       map[string]queues.QueueConfig{"import": {Concurrency: 1}},
		PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	client.Handle("row", func(ctx context.Context, job *queues.Job) error {
		return queues.Permanent(fmt.Errorf("row %d: column 7 is not a date", job.ID))
	})
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	defer client.Stop(ctx)
	job, err := client.Enqueue(ctx, queues.EnqueueParams{Queue: "import", Kind: "row"})
	if err != nil {
		panic(err)
	}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for range 400 { // poll up to 10s for the dead letter
		if j, _ := queues.JobGet(ctx, pool, job.ID); j.Status == queues.StatusDead {
			break
		}
		<-tick.C
	}
	groups, err := queues.DeadLetterGroups(ctx, pool, "import")
	if err != nil {
		panic(err)
	}
	fmt.Println(groups[0].Count, groups[0].ErrorClass)
	// Output: 1 row ?: column ? is not a date
}

// An operator throttles a queue fleet-wide: every process obeys within one
// poll interval, and running jobs are never killed by it.
func ExampleQueueSettingsSetTx() {
	ctx := context.Background()
	pool := examplePool()
	defer pool.Close()

	two, who := 2, "oncall"
	s, err := queues.QueueSettingsSetTx(ctx, pool, queues.QueueSettings{Queue: "email", MaxWorkers: &two, UpdatedBy: &who})
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Queue, *s.MaxWorkers, s.Paused)
	// Output: email 2 false
}

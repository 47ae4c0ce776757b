package queues

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/pgconsole/console/internal/testdb"
)

// benchJobs is the burn-down size: QUEUES_BENCH_JOBS, default 100,000.
func benchJobs() int {
	if n, err := strconv.Atoi(os.Getenv("QUEUES_BENCH_JOBS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// BenchmarkBurn works benchJobs() no-op jobs through a Client with
// concurrency 10 and 100 (go test -run '^$' -bench Burn -benchtime 1x
// ./queues/).
func BenchmarkBurn(b *testing.B) {
	pool := testdb.New(b)
	for _, conc := range []int{10, 100} {
		b.Run("Concurrency"+strconv.Itoa(conc), func(b *testing.B) {
			for b.Loop() {
				res, err := BenchBurn(context.Background(), pool, benchJobs(), conc)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(res.JobsPerSecond, "jobs/s")
				b.Log(res)
			}
		})
	}
}

// BenchmarkSQLFloor drives the same claim and ack statements without the
// engine, batch 1 (JobAck) and batch 10 (JobAckMany), 10 goroutines.
func BenchmarkSQLFloor(b *testing.B) {
	pool := testdb.New(b)
	for _, batch := range []int{1, 10} {
		b.Run("Batch"+strconv.Itoa(batch), func(b *testing.B) {
			for b.Loop() {
				res, err := BenchSQLFloor(context.Background(), pool, benchJobs(), 10, batch)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(res.JobsPerSecond, "jobs/s")
				b.Log(res)
			}
		})
	}
}

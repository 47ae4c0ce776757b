package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/river"
)

// The values of --queue-source (CONSOLE_QUEUE_SOURCE).
const (
	queueSourceAuto    = "auto"
	queueSourceConsole = queues.SourceConsole
	queueSourceRiver   = queues.SourceRiver
)

// checkQueueSource refuses a --queue-source the console does not know.
func checkQueueSource(mode string) error {
	switch mode {
	case queueSourceAuto, queueSourceConsole, queueSourceRiver:
		return nil
	}
	return usageError{fmt.Sprintf("--queue-source (CONSOLE_QUEUE_SOURCE) %q: use auto (River's tables when they hold the jobs), "+
		"console (this console's own job engine) or river (River's river_job, river_queue and river_leader)", mode)}
}

// pickQueueSource decides which engine the queue pages read, from what the
// database holds: the mode as given, River's schema as found, and whether
// the console's own engine has any job. auto reads River when its schema
// is complete and the console's engine is idle (no job), and the console's
// engine otherwise, saying why in note.
func pickQueueSource(mode string, rs river.Schema, consoleJobs bool) (engine, note string, err error) {
	switch mode {
	case queueSourceConsole:
		return queues.SourceConsole, "", nil
	case queueSourceRiver:
		if !rs.Present && len(rs.Missing) == 0 {
			return "", "", fmt.Errorf("--queue-source river: this database has no River tables (river_job, river_queue, river_leader) on its search path; migrate River's schema or point DATABASE_URL at River's database")
		}
		if err := rs.Check(); err != nil {
			return "", "", fmt.Errorf("--queue-source river: %w", err)
		}
		return queues.SourceRiver, "", nil
	}
	if !rs.Present && len(rs.Missing) == 0 {
		return queues.SourceConsole, "", nil
	}
	if err := rs.Check(); err != nil {
		return queues.SourceConsole, "River's tables found but not read: " + err.Error(), nil
	}
	if consoleJobs {
		return queues.SourceConsole, "River's schema found too, but the console's own engine has jobs: its queues are shown; start with --queue-source river to show River's", nil
	}
	return queues.SourceRiver, "", nil
}

// detectQueueSource looks at the database and decides which engine holds
// its jobs (pickQueueSource): queues.SourceRiver or queues.SourceConsole,
// River's schema as found, and the sentence saying why River was passed
// over ("" when it was not). `serve` and `findings` decide alike.
func detectQueueSource(ctx context.Context, pool *pgxpool.Pool, mode string) (engine string, rs river.Schema, note string, err error) {
	rs, err = river.Detect(ctx, pool)
	if err != nil {
		// River's tables exist but this role may not read them.
		const grant = "run `console roles sql` again after River's migrations so the console's roles may read River's tables"
		if mode == queueSourceRiver {
			return "", rs, "", fmt.Errorf("--queue-source river: %w (%s)", err, grant)
		}
		return queues.SourceConsole, rs, fmt.Sprintf("River's tables are not readable (%v): the console's own engine is read; %s", err, grant), nil
	}
	consoleJobs := false
	if rs.Present && mode == queueSourceAuto {
		counts, err := queues.QueueCounts(ctx, pool)
		if err != nil {
			return "", rs, "", err
		}
		for _, q := range counts {
			consoleJobs = consoleJobs || q.Ready+q.Running+q.Dead+q.DoneApprox > 0
		}
	}
	engine, note, err = pickQueueSource(mode, rs, consoleJobs)
	return engine, rs, note, err
}

// openQueueSource looks at the database and returns the Source the queue
// pages read: nil for the console's own engine (its pages read it
// directly), River's otherwise. It prints what it chose.
func openQueueSource(ctx context.Context, pool *pgxpool.Pool, mode string, stdout io.Writer) (queues.Source, error) {
	engine, rs, note, err := detectQueueSource(ctx, pool, mode)
	if err != nil {
		return nil, err
	}
	if note != "" {
		fmt.Fprintln(stdout, note)
	}
	if engine == queues.SourceRiver {
		fmt.Fprintf(stdout, "queue pages read River (schema at migration %d)\n", rs.Version)
		return river.NewSource(pool), nil
	}
	fmt.Fprintln(stdout, "queue pages read the console's own engine")
	return nil, nil
}

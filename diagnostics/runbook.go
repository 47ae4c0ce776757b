package diagnostics

// Runbook pages that checks and findings point to: the twelve steps of the
// evidence chain (/runbook/<step>) and the targeted runbooks they send an
// operator to (/runbook/rb-<letter>). The console's runbook content has a
// page for each; a test of the web package checks that every one resolves.
const (
	StepWindow       = "window"
	StepEntry        = "entry"
	StepActivity     = "activity"
	StepBlocking     = "blocking"
	StepResources    = "resources"
	StepCopy         = "copy"
	StepQueues       = "queues"
	StepOutbox       = "outbox"
	StepReplication  = "replication"
	StepPlans        = "plans"
	StepMitigations  = "mitigations"
	StepVerification = "verification"

	// RunbookPoolWait: pool acquire time high, few active backends.
	RunbookPoolWait = "rb-a"
	// RunbookSlotRetention: an outbox backlog while a slot fills the WAL
	// disk.
	RunbookSlotRetention = "rb-b"
	// RunbookWALStorm: backfill batches causing a WAL storm.
	RunbookWALStorm = "rb-c"
	// RunbookExpiredLeases: expired leases and stuck running jobs.
	RunbookExpiredLeases = "rb-f"
	// RunbookDeadLetters: a dead-letter spike.
	RunbookDeadLetters = "rb-g"
	// RunbookOutboxLag: outbox and relay lag.
	RunbookOutboxLag = "rb-h"
	// RunbookReplication: replication lag or archive failure.
	RunbookReplication = "rb-j"
	// RunbookPreparedXact: a dangling prepared transaction.
	RunbookPreparedXact = "rb-l"
	// RunbookNotify: LISTEN/NOTIFY problems.
	RunbookNotify = "rb-p"
	// RunbookTenantStarvation: one tenant's jobs wait while others flow.
	RunbookTenantStarvation = "rb-r"
	// RunbookRiver: a River database's queues (backlog, stuck jobs,
	// discards, leadership).
	RunbookRiver = "rb-s"
)

// RunbookURL is the console's page of a runbook step or targeted runbook.
func RunbookURL(page string) string { return "/runbook/" + page }

package diagnostics

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// rowTypes is a zero row of every check, by name: a new check adds its row
// type here.
var rowTypes = map[string]any{
	CheckServerInfo: Server{}, CheckConnections: ConnectionCount{}, CheckWALPosition: WALPoint{},
	CheckBlockingTree: BlockingNode{}, CheckBlockedJobs: BlockedJob{}, CheckActivity: Backend{}, CheckIdleInTransaction: IdleTx{},
	CheckLockWaits: LockWait{}, CheckWALStats: WALStat{}, CheckIOStats: IOStat{},
	CheckCheckpointer: CheckpointerStat{}, CheckCopyProgress: CopyRun{}, CheckQueueHealth: QueueStat{},
	CheckDeadLetters: DeadLetterGroup{}, CheckTenantBacklog: TenantBacklog{}, CheckWorkers: Worker{}, CheckOutboxHealth: OutboxStat{},
	CheckReplication: Standby{}, CheckStandbyStatus: StandbyState{}, CheckReplicationSlots: Slot{},
	CheckArchiver: ArchiverStat{}, CheckStatementsTop: Statement{}, CheckPreparedXacts: PreparedXact{},
	CheckXminHorizon: XminHolder{}, CheckTableVacuum: TableStat{}, CheckInvalidIndexes: InvalidIndex{},
	CheckNotifyQueue: NotifyUsage{}, CheckConnectionUse: ConnectionGroup{}, CheckSequenceUse: SequenceUse{},
	CheckWraparound: WraparoundAge{}, CheckIdempotencyStuck: StuckIdempotencyKey{}, CheckLongRunningJobs: LongRunningJob{},
	CheckStandbyConflicts: StandbyConflict{}, CheckWALDir: WALDirStat{}, CheckDeadlocks: DeadlockStat{},
	CheckRepeatBlockers: RepeatBlocker{},
}

// TestCatalogEntriesAreComplete: every check has a title, a runbook step, a
// panel, an SQL file for every server version it runs on, and columns that
// name fields of its row type (read from rows of that type, not NULL for
// all of them); every check the collector exports takes part in rounds.
func TestCatalogEntriesAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Catalog() {
		require.False(t, seen[c.Name], "%s is in the catalog twice", c.Name)
		seen[c.Name] = true
		got, ok := CheckNamed(c.Name)
		require.True(t, ok, c.Name)
		require.Equal(t, c.Title, got.Title)
		require.NotEmpty(t, c.Title, c.Name)
		require.NotEmpty(t, c.Step, c.Name)
		require.NotNil(t, c.panel, c.Name)
		if c.metrics {
			require.NotNil(t, c.round, "%s is exported by the collector, so a round reads it", c.Name)
		}
		_, ok = SQLFor(c.Name, 0)
		require.True(t, ok, "%s has SQL for the newest server", c.Name)
		for _, v := range c.variants {
			_, ok := SQLFor(c.Name, v.MinVersion)
			require.True(t, ok, "%s has SQL for version %d", c.Name, v.MinVersion)
		}

		row, ok := rowTypes[c.Name]
		require.True(t, ok, "rowTypes has no row for %s", c.Name)
		if c.Name == CheckBlockingTree {
			require.Empty(t, c.Columns, "the blocking tree is drawn as a tree")
			continue
		}
		require.NotEmpty(t, c.Columns, c.Name)
		row = filled(row)
		var fields map[string]any
		b, err := json.Marshal(row)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &fields))
		for _, col := range c.Columns {
			require.Contains(t, fields, col.Name, "%s: column %q is not a field of %T", c.Name, col.Name, row)
			require.False(t, col.Value(row).Null, "%s: column %q reads NULL from a %T with every field set", c.Name, col.Name, row)
		}
	}
	require.Len(t, rowTypes, len(seen), "rowTypes names a check that is not in the catalog")
}

// filled returns row with every pointer field pointing at a zero value and
// every slice holding one, so no field is NULL.
func filled(row any) any {
	v := reflect.New(reflect.TypeOf(row)).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch {
		case !v.Type().Field(i).IsExported():
		case f.Kind() == reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case f.Kind() == reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		}
	}
	return v.Interface()
}

// TestStepPanels: a runbook step shows every check that is evidence for it,
// then the ones it borrows, each once; every step of the evidence chain
// shows at least one panel.
func TestStepPanels(t *testing.T) {
	for _, step := range []string{StepWindow, StepEntry, StepActivity, StepBlocking, StepResources, StepCopy,
		StepQueues, StepOutbox, StepReplication, StepPlans, StepMitigations, StepVerification} {
		panels := StepPanels(step)
		require.NotEmpty(t, panels, step)
		seen := map[string]bool{}
		for _, p := range panels {
			require.False(t, seen[p], "%s shows %s twice", step, p)
			seen[p] = true
		}
		own := 0
		for _, c := range Catalog() {
			if c.Step == step {
				require.Equal(t, c.Name, panels[own], "%s: its own checks first, in catalog order", step)
				own++
			}
			for _, also := range c.AlsoSteps {
				require.NotEqual(t, c.Step, also, "%s borrows its own step", c.Name)
				if also == step {
					require.True(t, seen[c.Name], "%s borrows %s", step, c.Name)
				}
			}
		}
		require.Len(t, panels, len(seen))
	}
	require.Equal(t, []string{CheckConnections, CheckConnectionUse, CheckIdempotencyStuck, CheckQueueHealth, CheckWorkers}, StepPanels(StepEntry))
	require.Contains(t, StepPanels(StepReplication), CheckStandbyConflicts)
	require.Contains(t, StepPanels(StepQueues), CheckLongRunningJobs)
	require.Contains(t, StepPanels(StepVerification), CheckWraparound)
	require.Empty(t, StepPanels("rb-a"), "targeted runbooks show their steps' panels, none of their own")
}

// TestCapturedRowsReadBackEveryCheck: a capture stores a panel's rows as
// JSON; every check reads them back as its own row type with the same
// values, so a captured panel is drawn by the live panel's code.
func TestCapturedRowsReadBackEveryCheck(t *testing.T) {
	t.Parallel()
	for _, c := range Catalog() {
		row := filled(rowTypes[c.Name])
		data, err := json.Marshal([]any{row})
		require.NoError(t, err)
		rows, err := c.CapturedRows(data)
		require.NoError(t, err, c.Name)
		require.Len(t, rows, 1, c.Name)
		require.IsType(t, row, rows[0], "%s reads its rows back as its own type", c.Name)
		again, err := json.Marshal(rows)
		require.NoError(t, err)
		require.JSONEq(t, string(data), string(again), "%s keeps every value", c.Name)
	}
}

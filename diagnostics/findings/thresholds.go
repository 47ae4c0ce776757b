package findings

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pgconsole/console/diagnostics"
)

// thresholdKind is the unit of a threshold value.
type thresholdKind int

const (
	kindDuration thresholdKind = iota
	kindCount
	kindSize
	kindRate
	kindFraction
)

// thresholdSetting is one settable threshold: a code (a finding code, or
// code.suffix for a second dimension) and the field it sets.
type thresholdSetting struct {
	kind thresholdKind
	dur  func(*diagnostics.Thresholds) *time.Duration
	num  func(*diagnostics.Thresholds) *int64
	flt  func(*diagnostics.Thresholds) *float64
}

func durSetting(f func(*diagnostics.Thresholds) *time.Duration) thresholdSetting {
	return thresholdSetting{kind: kindDuration, dur: f}
}
func countSetting(f func(*diagnostics.Thresholds) *int64) thresholdSetting {
	return thresholdSetting{kind: kindCount, num: f}
}
func sizeSetting(f func(*diagnostics.Thresholds) *int64) thresholdSetting {
	return thresholdSetting{kind: kindSize, num: f}
}

// thresholdSettings maps each settable code to its field. Codes with two
// dimensions take either: "queue.backlog=10m" sets the age,
// "queue.backlog=5000" the count.
var thresholdSettings = map[string][]thresholdSetting{
	CodeRootBlocker:       {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.RootBlockerWait })},
	CodeEngineStalled:     {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.RootBlockerWait })},
	CodeIdleInTransaction: {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.IdleInTransaction })},
	CodeLongRunning:       {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.LongRunningTx })},
	CodeQueueBacklog:      {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.QueueBacklogAge }), countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.QueueBacklogReady })},
	CodeTenantStarvation:  {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.QueueBacklogAge })},
	CodeExpiredLeases:     {countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.ExpiredLeases })},
	CodeDeadLetters:       {countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.DeadLetters }), durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.DeadLetterWindow })},
	CodeOutboxBacklog:     {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.OutboxBacklogAge }), countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.OutboxBacklogPending })},
	CodeOutboxDead:        {countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.OutboxDead })},
	CodeReplicationLag:    {sizeSetting(func(t *diagnostics.Thresholds) *int64 { return &t.ReplicationLagBytes }), durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.ReplicationLagTime })},
	CodeSlotRetention:     {sizeSetting(func(t *diagnostics.Thresholds) *int64 { return &t.SlotRetentionBytes }), durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.SlotExhaustion })},
	CodeSlotInactive:      {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.SlotInactive })},
	CodeWALRateHigh:       {{kind: kindRate, flt: func(t *diagnostics.Thresholds) *float64 { return &t.WALRate }}},
	CodeArchiverBacklog:   {countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.ArchiverBacklog })},
	CodePreparedXactOld:   {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.PreparedXactAge })},
	CodeXminHorizon:       {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.XminHorizonAge }), countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.XminHorizonXIDs })},
	CodeDeadTuples:        {countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.DeadTuples })},
	CodeNotifyQueueUsage:  {{kind: kindFraction, flt: func(t *diagnostics.Thresholds) *float64 { return &t.NotifyQueueUsage }}},
	CodeConnections:       {{kind: kindFraction, flt: func(t *diagnostics.Thresholds) *float64 { return &t.Connections }}},
	CodeSequence:          {{kind: kindFraction, flt: func(t *diagnostics.Thresholds) *float64 { return &t.Sequence }}},
	CodeWorkersNoneAlive:  {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.WorkerHeartbeat })},
	CodeWraparound:        {{kind: kindFraction, flt: func(t *diagnostics.Thresholds) *float64 { return &t.Wraparound }}},
	CodeIdempotencyStuck:  {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.IdempotencyStuck })},
	CodeLongRunningJob:    {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.LongRunningJob }), countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.LongRunningJobFactor })},
	CodeCheckpoints:       {{kind: kindFraction, flt: func(t *diagnostics.Thresholds) *float64 { return &t.CheckpointRequested }}, durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.CheckpointWindow })},
	CodeStandbyConflicts:  {countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.StandbyConflicts }), durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.StandbyConflictWindow })},
	CodeEngineErrors:      {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.EngineErrorWindow })},
	CodeWALDir:            {countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.WALDirFactor }), sizeSetting(func(t *diagnostics.Thresholds) *int64 { return &t.WALDirBudget })},
	CodeSlotDiskForecast:  {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.SlotDiskForecast })},
	CodeDeadlocks:         {countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.Deadlocks }), durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.DeadlockWindow })},
	CodeArchiverStalled:   {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.ArchiverStall })},
	CodeRepeatBlocker:     {countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.RepeatBlockers })},
	CodeRiverBacklog:      {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.QueueBacklogAge }), countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.QueueBacklogReady })},
	CodeRiverStuckRunning: {durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.RiverRescueAfter }), countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.LongRunningJobFactor })},
	CodeRiverDiscardBurst: {countSetting(func(t *diagnostics.Thresholds) *int64 { return &t.DeadLetters }), durSetting(func(t *diagnostics.Thresholds) *time.Duration { return &t.DeadLetterWindow })},
}

// ThresholdCodes lists the codes SetThreshold accepts, sorted.
func ThresholdCodes() []string {
	out := make([]string, 0, len(thresholdSettings))
	for k := range thresholdSettings {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SetThreshold overrides one finding's threshold in t from text, as given on the command
// line ("tx.long_running=30s" is SetThreshold(t, "tx.long_running", "30s")). Durations
// look like 30s or 5m, sizes like 64MB or 1GiB (or plain bytes), counts and
// rates are plain numbers (rates may carry a size unit: 50MB means 50 MB/s).
// For codes with two dimensions the value's form picks the field:
// "queue.backlog=10m" sets the age, "queue.backlog=5000" the ready count.
func SetThreshold(t *diagnostics.Thresholds, code, value string) error {
	settings, ok := thresholdSettings[code]
	if !ok {
		return fmt.Errorf("unknown threshold %q (known: %s)", code, strings.Join(ThresholdCodes(), ", "))
	}
	value = strings.TrimSpace(value)
	var errs []string
	for _, s := range settings {
		switch s.kind {
		case kindDuration:
			if d, err := time.ParseDuration(value); err == nil && d >= 0 {
				*s.dur(t) = d
				return nil
			}
			errs = append(errs, "a duration like 30s")
		case kindCount:
			if n, err := strconv.ParseInt(value, 10, 64); err == nil && n >= 0 {
				*s.num(t) = n
				return nil
			}
			errs = append(errs, "a count")
		case kindSize:
			if n, err := ParseSize(value); err == nil {
				*s.num(t) = n
				return nil
			}
			errs = append(errs, "a size like 64MB")
		case kindRate:
			if n, err := ParseSize(strings.TrimSuffix(strings.TrimSuffix(value, "/s"), "ps")); err == nil {
				*s.flt(t) = float64(n)
				return nil
			}
			errs = append(errs, "a rate in bytes per second like 50MB")
		case kindFraction:
			f, err := strconv.ParseFloat(strings.TrimSuffix(value, "%"), 64)
			if err == nil && strings.HasSuffix(value, "%") {
				f /= 100
			}
			if err == nil && f >= 0 && f <= 1 {
				*s.flt(t) = f
				return nil
			}
			errs = append(errs, "a fraction like 0.5 or 50%")
		}
	}
	return fmt.Errorf("threshold %s=%q: want %s", code, value, strings.Join(errs, " or "))
}

// SetThresholdFlag applies one "CODE=VALUE" override to t, the form of `console findings
// --threshold` and of the serve settings; see SetThreshold.
func SetThresholdFlag(t *diagnostics.Thresholds, s string) error {
	code, value, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("threshold %q: want CODE=VALUE, e.g. tx.long_running=30s", s)
	}
	return SetThreshold(t, strings.TrimSpace(code), value)
}

// ParseSize parses a byte size: a plain number of bytes, or a number with a
// unit kB, MB, GB, TB (powers of 1024, as PostgreSQL reads them) or KiB, MiB,
// GiB, TiB.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("size %q: not a number", s)
	}
	mult := map[string]float64{
		"": 1, "b": 1, "B": 1,
		"k": 1 << 10, "kB": 1 << 10, "KB": 1 << 10, "KiB": 1 << 10,
		"M": 1 << 20, "MB": 1 << 20, "MiB": 1 << 20,
		"G": 1 << 30, "GB": 1 << 30, "GiB": 1 << 30,
		"T": 1 << 40, "TB": 1 << 40, "TiB": 1 << 40,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q", s, unit)
	}
	v := f * mult
	if v > math.MaxInt64 {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return int64(v), nil
}

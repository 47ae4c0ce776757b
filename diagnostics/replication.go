package diagnostics

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Standby is one WAL sender as the primary sees it: how far the standby (or
// logical consumer) has received, flushed and replayed.
type Standby struct {
	PID              int32      `db:"pid" json:"pid"`
	ApplicationName  string     `db:"application_name" json:"application_name"`
	ClientAddr       string     `db:"client_addr" json:"client_addr"`
	State            string     `db:"state" json:"state"`
	SyncState        string     `db:"sync_state" json:"sync_state"`
	SentLSN          *string    `db:"sent_lsn" json:"sent_lsn"`
	WriteLSN         *string    `db:"write_lsn" json:"write_lsn"`
	FlushLSN         *string    `db:"flush_lsn" json:"flush_lsn"`
	ReplayLSN        *string    `db:"replay_lsn" json:"replay_lsn"`
	SentLagBytes     int64      `db:"sent_lag_bytes" json:"sent_lag_bytes"`
	WriteLagBytes    int64      `db:"write_lag_bytes" json:"write_lag_bytes"`
	FlushLagBytes    int64      `db:"flush_lag_bytes" json:"flush_lag_bytes"`
	ReplayLagBytes   int64      `db:"replay_lag_bytes" json:"replay_lag_bytes"`
	WriteLagSeconds  *float64   `db:"write_lag_seconds" json:"write_lag_seconds"`
	FlushLagSeconds  *float64   `db:"flush_lag_seconds" json:"flush_lag_seconds"`
	ReplayLagSeconds *float64   `db:"replay_lag_seconds" json:"replay_lag_seconds"`
	XminAge          *int32     `db:"xmin_age" json:"xmin_age"`
	ReplyTime        *time.Time `db:"reply_time" json:"reply_time"`
}

// Replication lists the WAL senders of this server, most replay lag first
// (replication.sql).
func Replication(ctx context.Context, db DBTX) ([]Standby, error) {
	return collect[Standby](ctx, db, CheckReplication, 0)
}

// Replication runs replication.sql as a panel.
func (d *Diagnostics) Replication(ctx context.Context) Result[Standby] {
	return panel(ctx, d, CheckReplication, many(Replication))
}

// StandbyState is what a standby says about itself: receiver, replay
// position and pause state.
type StandbyState struct {
	InRecovery         bool       `db:"in_recovery" json:"in_recovery"`
	ReceiveLSN         string     `db:"receive_lsn" json:"receive_lsn"`
	ReplayLSN          string     `db:"replay_lsn" json:"replay_lsn"`
	ReplayLagBytes     int64      `db:"replay_lag_bytes" json:"replay_lag_bytes"`
	LastReplayAt       *time.Time `db:"last_replay_at" json:"last_replay_at"`
	ReplayDelaySeconds float64    `db:"replay_delay_seconds" json:"replay_delay_seconds"`
	// ReplayPauseState is "not paused", "pause requested" or "paused"
	// (empty on a primary).
	ReplayPauseState   string     `db:"replay_pause_state" json:"replay_pause_state"`
	ReceiverStatus     string     `db:"receiver_status" json:"receiver_status"`
	SenderHost         string     `db:"sender_host" json:"sender_host"`
	SenderPort         int32      `db:"sender_port" json:"sender_port"`
	SlotName           string     `db:"slot_name" json:"slot_name"`
	FlushedLSN         string     `db:"flushed_lsn" json:"flushed_lsn"`
	LatestEndLSN       string     `db:"latest_end_lsn" json:"latest_end_lsn"`
	LastMsgReceiptTime *time.Time `db:"last_msg_receipt_time" json:"last_msg_receipt_time"`
	LatestEndTime      *time.Time `db:"latest_end_time" json:"latest_end_time"`
	// ApplicationName is the name this standby gives the primary, as
	// pg_stat_replication and the xmin horizon show it.
	ApplicationName    string `db:"application_name" json:"application_name"`
	HotStandbyFeedback bool   `db:"hot_standby_feedback" json:"hot_standby_feedback"`
	// OldestPID, OldestQuery, OldestApplication and OldestXactSeconds are
	// the client backend with the oldest snapshot on this standby: with
	// hot_standby_feedback on, the one holding the primary's xmin horizon.
	// OldestPID is nil when no snapshot is open.
	OldestPID         *int32   `db:"oldest_pid" json:"oldest_pid"`
	OldestQuery       string   `db:"oldest_query" json:"oldest_query"`
	OldestApplication string   `db:"oldest_application" json:"oldest_application"`
	OldestXactSeconds *float64 `db:"oldest_xact_seconds" json:"oldest_xact_seconds"`

	// URL names the standby this state was read from (set by Diagnostics,
	// without credentials).
	URL string `db:"-" json:"url"`
	// PrimaryLagBytes is the true lag: the primary's WAL position read in
	// the same round minus this standby's replay position, counting WAL the
	// standby has not even received. Nil outside a round or when either
	// position is unknown (set by Diagnostics).
	PrimaryLagBytes *int64 `db:"-" json:"primary_lag_bytes"`
}

// parseLSN converts a WAL position written as PostgreSQL prints it
// ("16/B374D848") to bytes.
func parseLSN(lsn string) (int64, error) {
	hi, lo, ok := strings.Cut(lsn, "/")
	if !ok {
		return 0, fmt.Errorf("WAL position %q: want two hex numbers separated by /", lsn)
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("WAL position %q: want two hex numbers separated by /", lsn)
	}
	return int64(h<<32 | l), nil
}

// Paused reports whether replay is paused or a pause was requested.
func (s StandbyState) Paused() bool {
	return s.ReplayPauseState == "paused" || s.ReplayPauseState == "pause requested"
}

// StandbyStatus reads, on a standby, its receiver and replay state
// (standby_status.sql).
func StandbyStatus(ctx context.Context, db DBTX) (StandbyState, error) {
	return collectOne[StandbyState](ctx, db, CheckStandbyStatus, 0)
}

// Slot is one replication slot with the WAL and the xmin it holds back.
type Slot struct {
	SlotName          string  `db:"slot_name" json:"slot_name"`
	Plugin            string  `db:"plugin" json:"plugin"`
	SlotType          string  `db:"slot_type" json:"slot_type"`
	Database          string  `db:"database" json:"database"`
	Temporary         bool    `db:"temporary" json:"temporary"`
	Active            bool    `db:"active" json:"active"`
	ActivePID         *int32  `db:"active_pid" json:"active_pid"`
	Xmin              *string `db:"xmin" json:"xmin"`
	CatalogXmin       *string `db:"catalog_xmin" json:"catalog_xmin"`
	XminAge           *int32  `db:"xmin_age" json:"xmin_age"`
	CatalogXminAge    *int32  `db:"catalog_xmin_age" json:"catalog_xmin_age"`
	RestartLSN        *string `db:"restart_lsn" json:"restart_lsn"`
	ConfirmedFlushLSN *string `db:"confirmed_flush_lsn" json:"confirmed_flush_lsn"`
	// RetainedBytes is the WAL kept for this slot: the current position
	// minus restart_lsn.
	RetainedBytes int64 `db:"retained_bytes" json:"retained_bytes"`
	// WALStatus is reserved, extended, unreserved or lost.
	WALStatus string `db:"wal_status" json:"wal_status"`
	// SafeWALSize is the WAL that can still be written before the slot is
	// invalidated by max_slot_wal_keep_size; nil when unlimited.
	SafeWALSize *int64 `db:"safe_wal_size" json:"safe_wal_size"`
	// MaxSlotWALKeepBytes is max_slot_wal_keep_size in bytes, -1 when
	// unlimited: then only the WAL disk bounds what a slot retains.
	MaxSlotWALKeepBytes int64 `db:"max_slot_wal_keep_bytes" json:"max_slot_wal_keep_bytes"`
	// PGWALBytes is the size of pg_wal; nil when the role may not list it.
	PGWALBytes         *int64     `db:"pg_wal_bytes" json:"pg_wal_bytes"`
	InactiveSince      *time.Time `db:"inactive_since" json:"inactive_since"`
	InvalidationReason string     `db:"invalidation_reason" json:"invalidation_reason"`

	// SecondsToExhaustion estimates when the slot will be invalidated at
	// the current WAL rate (SafeWALSize / rate); nil when SafeWALSize is
	// unlimited or the rate unknown. Set by Diagnostics.
	SecondsToExhaustion *float64 `db:"-" json:"seconds_to_exhaustion"`
	// RetainedGrowth is how fast RetainedBytes grew, in bytes per second,
	// over the last GrowthSeconds of findings rounds; nil until rounds have
	// read the slot for a minute, and again after its retained WAL shrank.
	// Set by Diagnostics.
	RetainedGrowth *float64 `db:"-" json:"retained_growth,omitempty"`
	GrowthSeconds  *float64 `db:"-" json:"growth_seconds,omitempty"`
}

// ReplicationSlots lists every slot, most retained WAL first
// (replication_slots.sql; replication_slots_v17.sql with inactive_since and
// invalidation_reason on 17+).
func ReplicationSlots(ctx context.Context, db DBTX, version int) ([]Slot, error) {
	return collect[Slot](ctx, db, CheckReplicationSlots, version)
}

// ReplicationSlots runs replication_slots.sql (or its version variant) as a
// panel, with SecondsToExhaustion from the latest known WAL rate.
func (d *Diagnostics) ReplicationSlots(ctx context.Context) Result[Slot] {
	r := panel(ctx, d, CheckReplicationSlots, ReplicationSlots)
	rate := d.knownWALRate()
	for i := range r.Rows {
		r.Rows[i].SecondsToExhaustion = slotExhaustion(r.Rows[i].SafeWALSize, rate)
	}
	return r
}

// slotExhaustion estimates the seconds until a slot with safeWALSize bytes of
// headroom is invalidated at bytesPerSecond, or nil when either is unknown.
func slotExhaustion(safeWALSize *int64, bytesPerSecond float64) *float64 {
	if safeWALSize == nil || bytesPerSecond <= 0 {
		return nil
	}
	s := float64(*safeWALSize) / bytesPerSecond
	if s < 0 {
		s = 0
	}
	return &s
}

// ArchiverStat is pg_stat_archiver with the archive_mode setting.
type ArchiverStat struct {
	ArchiveMode      string     `db:"archive_mode" json:"archive_mode"`
	ArchivedCount    int64      `db:"archived_count" json:"archived_count"`
	FailedCount      int64      `db:"failed_count" json:"failed_count"`
	LastArchivedWAL  string     `db:"last_archived_wal" json:"last_archived_wal"`
	LastArchivedTime *time.Time `db:"last_archived_time" json:"last_archived_time"`
	LastFailedWAL    string     `db:"last_failed_wal" json:"last_failed_wal"`
	LastFailedTime   *time.Time `db:"last_failed_time" json:"last_failed_time"`
	// Failing is true when the last failure is newer than the last success.
	Failing    bool       `db:"failing" json:"failing"`
	StatsReset *time.Time `db:"stats_reset" json:"stats_reset"`
	// ReadySegments is the number of WAL segments waiting to be archived
	// (.ready files); nil when archiving is off or the role may not list
	// the archive status folder.
	ReadySegments *int64 `db:"ready_segments" json:"ready_segments"`
	// SegmentsBehind is how many finished segments lie between the last
	// archived one and the one being written; nil on a standby, with
	// archiving off, or before anything was archived.
	SegmentsBehind *int64 `db:"segments_behind" json:"segments_behind"`
	// OldestReadySeconds is the age of the oldest segment waiting to be
	// archived (its .ready file); nil when none waits or, like
	// ReadySegments, it cannot be read.
	OldestReadySeconds *float64 `db:"oldest_ready_seconds" json:"oldest_ready_seconds"`
	// ArchivingConfigured says whether archive_command or archive_library
	// is set; nil when archiving is off (it is not read then) and when the
	// role may read neither setting.
	ArchivingConfigured *bool `db:"archiving_configured" json:"archiving_configured"`
}

// Unconfigured reports whether archive_mode is on (or always) with neither
// archive_command nor archive_library set: nothing will ever be archived.
func (a ArchiverStat) Unconfigured() bool {
	return a.ArchiveMode != "" && a.ArchiveMode != "off" && a.ArchivingConfigured != nil && !*a.ArchivingConfigured
}

// Backlog is the number of segments waiting to be archived: the .ready
// count when it could be read, else the distance from the last archived
// segment, else 0.
func (a ArchiverStat) Backlog() int64 {
	switch {
	case a.ReadySegments != nil:
		return *a.ReadySegments
	case a.SegmentsBehind != nil:
		return *a.SegmentsBehind
	}
	return 0
}

// Archiver reads the WAL archiver's counters (archiver.sql).
func Archiver(ctx context.Context, db DBTX) (ArchiverStat, error) {
	return collectOne[ArchiverStat](ctx, db, CheckArchiver, 0)
}

// Archiver runs archiver.sql as a panel.
func (d *Diagnostics) Archiver(ctx context.Context) Result[ArchiverStat] {
	return panel(ctx, d, CheckArchiver, one(Archiver))
}

// StandbyStatus runs standby_status.sql on every standby of
// Config.StandbyURLs, one Result per standby, in order (Name is
// "standby_status <host:port>").
func (d *Diagnostics) StandbyStatus(ctx context.Context) []Result[StandbyState] {
	out := make([]Result[StandbyState], 0, len(d.standbys))
	for _, s := range d.standbys {
		out = append(out, d.standbyStatus(ctx, s))
	}
	return out
}

func (d *Diagnostics) standbyStatus(ctx context.Context, s standbyPool) Result[StandbyState] {
	r := Result[StandbyState]{Name: CheckStandbyStatus + " " + s.name, SQL: d.SQL(CheckStandbyStatus)}
	var st StandbyState
	p := d.exec(ctx, s.pool, pgx.ReadCommitted, r.Name, func(ctx context.Context, db DBTX) error {
		var err error
		st, err = StandbyStatus(ctx, db)
		return err
	})
	st.URL = s.name
	if p.Err == nil {
		r.Rows = []StandbyState{st}
	}
	r.Err, r.TimedOut, r.LockedBy, r.Took = p.Err, p.TimedOut, p.LockedBy, p.Took
	return r
}

// standbyStatusPanel is standby_status as one panel: the rows of every
// configured standby, and the first failure.
func (d *Diagnostics) standbyStatusPanel(ctx context.Context) PanelResult {
	return d.standbysPanel(CheckStandbyStatus, func(sp standbyPool) PanelResult { return untyped(d.standbyStatus(ctx, sp)) })
}

// standbysPanel is a query run on every standby as one panel: the rows of
// each standby, in order, and the first failure.
func (d *Diagnostics) standbysPanel(name string, run func(standbyPool) PanelResult) PanelResult {
	merged := PanelResult{Name: name, SQL: d.SQL(name)}
	for _, sp := range d.standbys {
		u := run(sp)
		merged.Rows = append(merged.Rows, u.Rows...)
		merged.Took += u.Took
		if merged.Err == nil && u.Err != nil {
			merged.Err, merged.TimedOut, merged.LockedBy = u.Err, u.TimedOut, u.LockedBy
		}
	}
	return merged
}

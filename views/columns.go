package views

import "strings"

// ColumnLabel is the heading of a diagnostics column, from its field name:
// a word an operator reads ("Dead rows"), not the catalog's name
// ("n_dead_tup"). Units are left out: the values carry them ("4m12s",
// "1.5 MiB"). A name the table does not know is spelled out from its
// words, first letter capitalised.
func ColumnLabel(name string) string {
	if l, ok := columnLabels[name]; ok {
		return l
	}
	for _, suffix := range []string{"_seconds", "_bytes", "_ms"} {
		name = strings.TrimSuffix(name, suffix)
	}
	words := strings.ReplaceAll(name, "_", " ")
	if words == "" {
		return ""
	}
	return strings.ToUpper(words[:1]) + words[1:]
}

// columnLabels names every column of the diagnostics catalog; a test keeps
// it complete.
var columnLabels = map[string]string{
	// Server and connections.
	"version_num": "Version number", "version": "Version", "in_recovery": "Standby",
	"database": "Database", "has_pg_stat_statements": "Statement statistics", "track_io_timing": "I/O timing",
	"max_slot_wal_keep_size": "Slot WAL limit", "pid": "PID", "application_name": "Application",
	"state": "State", "connections": "Connections", "max_connections": "Limit",
	"user": "User", "used": "Used", "reserved": "Reserved",
	// Activity and locks.
	"client_addr": "Client", "wait_event_type": "Wait type", "wait_event": "Waits on",
	"xact_age_seconds": "Transaction age", "query_age_seconds": "Query age", "xmin_age": "Xmin age (xids)",
	"blocked_by": "Blocked by", "query": "Query", "idle_seconds": "Idle for", "last_query": "Last query",
	"locktype": "Lock type", "relation": "Relation", "mode": "Mode", "waiting": "Waiting",
	"max_wait_seconds": "Longest wait", "pids": "PIDs",
	// WAL, I/O, checkpoints.
	"lsn": "WAL position", "lsn_bytes": "WAL position (bytes)", "sampled_at": "Sampled",
	"wal_records": "WAL records", "wal_fpi": "Full-page images", "wal_bytes": "WAL written",
	"wal_buffers_full": "WAL buffers full", "wal_write": "WAL writes", "wal_sync": "WAL syncs",
	"wal_write_time_ms": "WAL write time", "wal_sync_time_ms": "WAL sync time", "stats_reset": "Counters reset",
	"backend_type": "Backend type", "object": "Object", "context": "Context",
	"reads": "Reads", "read_bytes": "Read", "read_time_ms": "Read time",
	"writes": "Writes", "write_bytes": "Written", "write_time_ms": "Write time",
	"extends": "Extends", "extend_bytes": "Extended", "writebacks": "Writebacks",
	"writeback_time_ms": "Writeback time", "fsyncs": "Fsyncs", "fsync_time_ms": "Fsync time",
	"hits": "Cache hits", "evictions": "Evictions",
	"checkpoints_timed": "Scheduled checkpoints", "checkpoints_requested": "Requested checkpoints",
	"sync_time_ms": "Sync time", "buffers_checkpoint": "Buffers by checkpoints",
	"buffers_clean": "Buffers by bgwriter", "maxwritten_clean": "Bgwriter stops",
	"buffers_backend": "Buffers by backends", "buffers_alloc": "Buffers allocated",
	"bgwriter_stats_reset": "Counters reset",
	"command":              "Command", "type": "Type", "bytes_processed": "Bytes done", "bytes_total": "Bytes in all",
	"tuples_processed": "Rows done", "tuples_excluded": "Rows excluded", "tuples_skipped": "Rows skipped",
	"running_seconds": "Running for",
	// Queues, workers, outbox.
	"queue": "Queue", "ready": "Ready", "scheduled": "Scheduled", "oldest_ready_seconds": "Oldest ready",
	"running": "Running", "expired_leases": "Expired leases", "dead": "Dead", "dead_recent": "Dead lately",
	"paused": "Paused", "max_workers": "Worker limit", "rate_per_second": "Rate limit",
	"settings_updated_at": "Settings changed", "error_class": "Error class", "last_finished_at": "Last died",
	"id": "ID", "host": "Host", "queues": "Queues", "concurrency": "Concurrency", "in_flight": "In flight",
	"started_at": "Started", "last_seen_at": "Last seen", "stopped_at": "Stopped",
	"last_seen_seconds": "Silent for", "alive": "Alive",
	"pending": "Pending", "pending_later": "Pending later", "oldest_pending_at": "Oldest pending since",
	"oldest_pending_seconds": "Oldest pending", "inflight": "In flight", "last_dead_at": "Last died",
	"relay_paused": "Relay paused",
	// Replication and archiving.
	"sync_state": "Sync", "sent_lag_bytes": "Send lag", "write_lag_bytes": "Write lag",
	"flush_lag_bytes": "Flush lag", "replay_lag_bytes": "Replay lag", "write_lag_seconds": "Write delay",
	"flush_lag_seconds": "Flush delay", "replay_lag_seconds": "Replay delay", "reply_time": "Last reply",
	"receive_lsn": "Received up to", "replay_lsn": "Replayed up to", "last_replay_at": "Last replayed",
	"replay_delay_seconds": "Replay delay", "replay_pause_state": "Replay paused", "receiver_status": "Receiver",
	"sender_host": "Primary host", "sender_port": "Primary port", "slot_name": "Slot",
	"flushed_lsn": "Flushed up to", "latest_end_lsn": "Primary's last position",
	"last_msg_receipt_time": "Last message", "latest_end_time": "Primary's last report", "url": "Connection",
	"plugin": "Plugin", "slot_type": "Slot type", "temporary": "Temporary", "active": "Active",
	"active_pid": "Active PID", "xmin": "Xmin", "catalog_xmin": "Catalog xmin",
	"catalog_xmin_age": "Catalog xmin age (xids)", "restart_lsn": "Restart position",
	"confirmed_flush_lsn": "Confirmed up to", "retained_bytes": "WAL retained", "wal_status": "WAL status",
	"safe_wal_size": "WAL left before loss", "inactive_since": "Inactive since",
	"invalidation_reason": "Invalidated because", "seconds_to_exhaustion": "Disk full in",
	"archive_mode": "Archive mode", "archived_count": "Archived", "failed_count": "Failed",
	"last_archived_wal": "Last archived file", "last_archived_time": "Last archived",
	"last_failed_wal": "Last failed file", "last_failed_time": "Last failure", "failing": "Failing",
	// Statements.
	"queryid": "Query ID", "calls": "Calls", "rows": "Rows", "total_exec_time_ms": "Total time",
	"mean_exec_time_ms": "Mean time", "max_exec_time_ms": "Longest", "mean_plan_time_ms": "Mean planning",
	"shared_blks_hit": "Cache hits (blocks)", "shared_blks_read": "Disk reads (blocks)",
	"temp_blks_written": "Temp written (blocks)",
	// Vacuum, xmin horizon, indexes, sequences.
	"gid": "Transaction name", "xid": "Transaction ID", "xid_age": "Age (xids)", "prepared": "Prepared",
	"age_seconds": "Age", "owner": "Owner", "kind": "Kind", "holder": "Holder", "detail": "Detail",
	"schema": "Schema", "table": "Table", "n_live_tup": "Live rows", "n_dead_tup": "Dead rows",
	"dead_ratio": "Dead share", "n_mod_since_analyze": "Changed since analyze",
	"last_vacuum": "Last vacuum", "last_autovacuum": "Last autovacuum", "last_analyze": "Last analyze",
	"last_autoanalyze": "Last autoanalyze", "vacuum_count": "Vacuums", "autovacuum_count": "Autovacuums",
	"index": "Index", "valid": "Valid", "definition": "Definition", "usage": "Queue used",
	"sequence": "Sequence", "data_type": "Type", "column": "Column", "column_type": "Column type",
	"last_value": "Last value", "limit": "Limit", "used_fraction": "Used",
}

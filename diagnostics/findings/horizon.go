package findings

import (
	"github.com/pgconsole/console/diagnostics"

	"fmt"
	"strconv"
)

// The helpers of this file trace dead rows to their cause: VACUUM removes a
// dead row only once no transaction may still see it, so rows deleted
// after the oldest xmin still held (a backend's snapshot, a prepared
// transaction, a slot, a standby's feedback) stay in the queue tables, and
// the findings about either name the other.

// tableHolders are the round's xmin holders that keep VACUUM from removing
// dead rows of this database's tables, oldest first.
func tableHolders(r diagnostics.Round) []diagnostics.XminHolder {
	var out []diagnostics.XminHolder
	for _, h := range r.Xmin {
		if h.HoldsTables {
			out = append(out, h)
		}
	}
	return out
}

// holderSubject names a holder with the keys the actions use: pid for a
// backend, gid for a prepared transaction, slot_name for a slot, standby
// (its application_name) for a standby's feedback.
func holderSubject(h diagnostics.XminHolder, subj map[string]any) {
	subj["holder_kind"], subj["holder_id"], subj["holder_xmin"] = h.Kind, h.Holder, h.Xmin
	switch h.Kind {
	case "backend":
		if pid, err := strconv.ParseInt(h.Holder, 10, 32); err == nil {
			subj["pid"] = int32(pid)
		}
	case "prepared_xact":
		subj["gid"] = h.Holder
	case "slot", "slot_catalog":
		subj["slot_name"] = h.Holder
	case "standby":
		subj["standby"] = h.Holder
		if h.Detail != "" {
			subj["client_addr"] = h.Detail
		}
	}
}

// holderText says who a holder is in plain words: "backend pid 4242 (idle
// in transaction report-job ...)", "standby replica-1 at 10.0.0.7".
func holderText(h diagnostics.XminHolder) string {
	switch h.Kind {
	case "backend":
		return fmt.Sprintf("backend pid %s (%s)", h.Holder, short(h.Detail))
	case "prepared_xact":
		return fmt.Sprintf("prepared transaction %q (%s)", h.Holder, h.Detail)
	case "slot", "slot_catalog":
		return fmt.Sprintf("replication slot %s (%s)", h.Holder, h.Detail)
	case "standby":
		return fmt.Sprintf("standby %s at %s (hot_standby_feedback)", h.Holder, nonEmpty(h.Detail, "a local socket"))
	}
	return h.Kind + " " + h.Holder
}

// queueDeadRows sums the dead rows of the queue tables and lists the
// tables that have any, most first ("jobs 120000, outbox_events 800").
func queueDeadRows(r diagnostics.Round) (total int64, parts []string) {
	for _, tb := range r.Tables {
		if tb.QueueTable && tb.DeadTuples > 0 {
			total += tb.DeadTuples
			parts = append(parts, fmt.Sprintf("%s %d", tb.Table, tb.DeadTuples))
		}
	}
	return total, parts
}

// standbyHolding is the standby, among those the console reads
// (STANDBY_URLS), that sends the feedback of holder h: for a standby, the
// one whose application_name it is (or the only one, see below);
// for a physical slot, the standby streaming from it.
func standbyHolding(r diagnostics.Round, h diagnostics.XminHolder) *diagnostics.StandbyState {
	var only *diagnostics.StandbyState
	n := 0
	for i, s := range r.Standbys {
		if !s.InRecovery {
			continue
		}
		if h.Kind == "slot" {
			if s.SlotName != "" && s.SlotName == h.Holder {
				return &r.Standbys[i]
			}
			continue
		}
		if s.ApplicationName == h.Holder {
			return &r.Standbys[i]
		}
		only, n = &r.Standbys[i], n+1
	}
	// Without a name that matches (the role may not read the receiver's
	// conninfo), one standby read and one standby holding is a match.
	holders := 0
	for _, x := range r.Xmin {
		if x.Kind == "standby" {
			holders++
		}
	}
	if n == 1 && holders == 1 {
		return only
	}
	return nil
}

// standbySnapshotText says which query on the standby holds the snapshot
// its feedback sends, and adds it to subj.
func standbySnapshotText(r diagnostics.Round, h diagnostics.XminHolder, subj map[string]any) string {
	s := standbyHolding(r, h)
	if s == nil && h.Kind == "slot" {
		return ""
	}
	if s == nil {
		return "; set STANDBY_URLS to this standby so the console names the query there that holds it"
	}
	subj["standby_url"] = s.URL
	if s.OldestPID == nil {
		return fmt.Sprintf("; on %s no query holds a snapshot now (the feedback moves on at the next report)", s.URL)
	}
	subj["standby_pid"] = *s.OldestPID
	subj["standby_application_name"] = s.OldestApplication
	age := "of unknown age"
	if s.OldestXactSeconds != nil {
		subj["standby_xact_seconds"] = round1(*s.OldestXactSeconds)
		age = seconds(*s.OldestXactSeconds) + " old"
	}
	return fmt.Sprintf("; on %s, pid %d (application %q, transaction %s) holds the oldest snapshot: %s",
		s.URL, *s.OldestPID, s.OldestApplication, age, short(s.OldestQuery))
}

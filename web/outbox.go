package web

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// outboxDeadLimit bounds the dead events listed on /outbox.
const outboxDeadLimit = 50

// outboxLookupQuery is a parsed /outbox lookup: an event id for the inbox,
// and a scope and key for the idempotency table.
type outboxLookupQuery struct {
	EventID    string
	Scope, Key string
}

// parseOutboxLookup reads event_id, scope and key; a scope without a key is
// refused, since a key is what identifies a request.
func parseOutboxLookup(c echo.Context) (outboxLookupQuery, error) {
	var l outboxLookupQuery
	var err error
	q := paramsOf(c)
	if l.EventID, err = filterText(q, "event_id"); err != nil {
		return l, err
	}
	if l.Scope, err = filterText(q, "scope"); err != nil {
		return l, err
	}
	if l.Key, err = filterText(q, "key"); err != nil {
		return l, err
	}
	if l.Scope != "" && l.Key == "" {
		return l, errBadRequest("an idempotency lookup needs the key as well as the scope")
	}
	return l, nil
}

// outboxPage serves GET /outbox: states, relay settings and dead events,
// plus the lookups when event_id or key are given. The dead list and each
// lookup fail on their own.
func (s *Server) outboxPage(c echo.Context) error {
	lq, err := parseOutboxLookup(c)
	if err != nil {
		return err
	}
	t, err := parseTravel(c, time.Now().UTC())
	if err != nil {
		return err
	}
	if t.history {
		return s.pastOutbox(c, t)
	}
	ctx, cancel := readContext(c)
	defer cancel()
	stats, err := queues.OutboxHealth(ctx, s.cfg.Pool, 0)
	if err != nil {
		return err
	}
	relay, err := queues.RelaySettingsGet(ctx, s.cfg.Pool)
	if err != nil {
		return err
	}
	now := time.Now()
	role := readRole(c)
	trend := map[string]trend{}
	for _, name := range []string{"outbox.pending", "outbox.oldest_pending_seconds", "outbox.dead"} {
		trend[name] = series(s.cfg.Sampler, name, now)
	}
	m := outboxModel(stats, relay, trend, s.cfg.Diagnostics.Thresholds(), role, now)
	dead, err := queues.OutboxList(ctx, s.cfg.Pool, queues.OutboxListParams{State: "dead", Limit: outboxDeadLimit})
	m.Dead = outboxDeadPanel(dead, role, now)
	if err != nil {
		m.Dead = panelError(m.Dead, err)
	}

	stuck, err := queues.OutboxStuck(ctx, s.cfg.Pool, outboxListLimit)
	m.Stuck = outboxEventsPanel("outbox-stuck", "Oldest undelivered events", stuck, now,
		"Nothing is waiting for the relay.", " Pending and in-flight events would be listed here, oldest first: the head of the backlog.")
	if err != nil {
		m.Stuck = panelError(m.Stuck, err)
	}
	recent, err := queues.OutboxList(ctx, s.cfg.Pool, queues.OutboxListParams{Limit: outboxListLimit})
	m.Recent = outboxEventsPanel("outbox-recent", "Recent events", recent, now,
		"No event has been written to the outbox.", " Applications write events with queues.EnqueueEventTx in their own transactions.")
	if err != nil {
		m.Recent = panelError(m.Recent, err)
	}

	m.Lookup = views.OutboxLookup{EventID: lq.EventID, Scope: lq.Scope, Key: lq.Key}
	if lq.EventID != "" {
		var ev *queues.OutboxRecord
		if id, perr := strconv.ParseInt(lq.EventID, 10, 64); perr == nil && id > 0 {
			ev, err = queues.OutboxEventGet(ctx, s.cfg.Pool, id)
			if err != nil && !errors.Is(err, queues.ErrNotFound) {
				return err
			}
		}
		entries, ierr := queues.InboxLookup(ctx, s.cfg.Pool, lq.EventID)
		inbox := inboxPanel(entries, lq.EventID, now)
		if ierr != nil {
			inbox = panelError(inbox, ierr)
		}
		m.Lookup.Inbox = &inbox
		m.Lookup.Event, m.Lookup.EventPayload = outboxEventFacts(ev, now)
	}
	if lq.Key != "" {
		rec, err := queues.IdempotencyLookup(ctx, s.cfg.Pool, lq.Scope, lq.Key)
		if err != nil && !errors.Is(err, queues.ErrNotFound) {
			return err
		}
		m.Lookup.Idempotency, m.Lookup.Response, m.Lookup.Missing = idempotencyFacts(rec, lq.Scope, lq.Key, now)
	}
	return s.render(c, page{Title: "Outbox", Nav: "outbox", Model: m, Body: views.OutboxBody(m), Travel: &t})
}

// outboxModel maps the backlog, its trend from the sampler and the relay
// settings.
func outboxModel(st queues.OutboxStat, relay queues.RelaySettings, trend map[string]trend, th diagnostics.Thresholds, role string, now time.Time) views.OutboxPage {
	undelivered := st.PendingTotal() + st.Inflight
	published := max(st.RowsEstimate-undelivered-st.Dead, 0)
	pending := views.Tile{ID: "pending", Label: "Pending", Value: outboxCount(st, st.PendingTotal()), State: "ok",
		Meta:      fmt.Sprintf("%s due · %s", outboxCount(st, st.Pending), oldestText(undelivered, st.OldestPendingSeconds)),
		Threshold: "alert at " + humanize.Seconds(th.OutboxBacklogAge.Seconds()) + " waited",
		Spark:     spark(trend["outbox.pending"], 0, "pending outbox events", count)}
	if (relay.Paused && st.PendingTotal() > 0) || (th.OutboxBacklogAge > 0 && undelivered > 0 && st.OldestPendingSeconds >= th.OutboxBacklogAge.Seconds()) {
		pending.State = "warning"
	}
	inflight := views.Tile{ID: "inflight", Label: "In flight", Value: outboxCount(st, st.Inflight), State: "ok",
		Meta: outboxCount(st, st.ExpiredLeases) + " expired leases"}
	if st.ExpiredLeases > 0 {
		inflight.State = "warning"
	}
	dead := views.Tile{ID: "dead", Label: "Dead", Value: outboxCount(st, st.Dead), State: "ok", Meta: "out of attempts; requeue below",
		Threshold: fmt.Sprintf("alert at %d", th.OutboxDead),
		Spark:     spark(trend["outbox.dead"], float64(th.OutboxDead), "dead outbox events", count)}
	if st.Dead > 0 {
		dead.State = "critical"
	}
	pub := views.Tile{ID: "published", Label: "Published (approx)", Value: "~" + humanize.Int(published), State: "ok",
		Meta: outboxCount(st, st.AcceptedUnmarked) + " accepted, not yet marked"}
	if st.AcceptedUnmarked > 0 {
		pub.State = "warning"
		pub.Meta += " (may be delivered twice)"
	}
	m := views.OutboxPage{
		GeneratedAt: now.UTC().Format(time.RFC3339),
		States:      []views.Tile{pending, inflight, dead, pub},
		Relay: []views.Fact{
			{Label: "State", Value: map[bool]string{true: "◆ paused: nothing is published", false: "running"}[relay.Paused]},
			{Label: "Batch size", Value: optInt(relay.BatchSize, "each relay's own setting")},
			{Label: "Rate", Value: optRate(relay.RatePerSecond, "each relay's own setting")},
		},
	}
	if relay.UpdatedBy != nil {
		a := age(relay.UpdatedAt, now)
		m.Relay = append(m.Relay, views.Fact{Label: "Changed", Value: a.Text + " by " + *relay.UpdatedBy, Title: a.UTC})
	} else {
		m.Relay = append(m.Relay, views.Fact{Label: "Changed", Value: "never by an operator (defaults)"})
	}
	names := []string{"relay.pause", "relay.throttle"}
	if relay.Paused {
		names = []string{"relay.resume", "relay.throttle"}
	}
	m.RelayActions = actionLinks(names, role, nil)
	return m
}

// outboxCount is one of the outbox's counts, "≥ n" when it stopped at its
// cap.
func outboxCount(st queues.OutboxStat, n int64) string {
	if st.Capped(n) {
		return "≥ " + humanize.Int(n)
	}
	return humanize.Int(n)
}

// outboxDeadPanel lists dead events with a requeue button each.
func outboxDeadPanel(recs []queues.OutboxRecord, role string, now time.Time) views.Panel {
	p := views.Panel{
		ID: "outbox-dead", Title: "Dead events", Status: "ok",
		Columns: []views.Column{{Label: "Id", Num: true}, {Label: "Topic"}, {Label: "Event type"}, {Label: "Aggregate"},
			{Label: "Attempts", Num: true}, {Label: "Died"}, {Label: "Last error"}, {Label: "Actions"}},
		EmptyTitle: "No dead events.",
		EmptyWhy:   " Events the relay could not publish within their attempts would be listed here, newest first, with a requeue button.",
	}
	if len(recs) >= outboxDeadLimit {
		p.Note = fmt.Sprintf("The newest %d dead events.", outboxDeadLimit)
	}
	for _, r := range recs {
		id := itoa64(r.ID)
		p.Rows = append(p.Rows, []views.Cell{
			{Text: id, Href: "/outbox?event_id=" + id, Mono: true},
			{Text: r.Topic, Mono: true},
			{Text: r.EventType, Mono: true},
			{Text: r.AggregateType + "/" + r.AggregateID, Mono: true},
			{Text: fmt.Sprintf("%d/%d", r.Attempts, r.MaxAttempts)},
			ageCell(r.DeadAt, now),
			{Text: truncate(deref(r.LastError, ""), 120), Title: truncate(deref(r.LastError, ""), 1000)},
			{Actions: actionLinks([]string{"outbox.requeue"}, role, map[string]string{"ids": id})},
		})
	}
	return p
}

// outboxListLimit bounds the stuck and recent event lists.
const outboxListLimit = 20

// outboxEventsPanel lists events with their state and delivery progress:
// when each was written, its attempts, when it is next tried (or whose lease
// it is under) and its last error.
func outboxEventsPanel(id, title string, recs []queues.OutboxRecord, now time.Time, emptyTitle, emptyWhy string) views.Panel {
	p := views.Panel{
		ID: id, Title: title, Status: "ok",
		Columns: []views.Column{{Label: "Id", Num: true}, {Label: "Topic"}, {Label: "Event type"}, {Label: "State"},
			{Label: "Written"}, {Label: "Attempts", Num: true}, {Label: "Next try or lease"}, {Label: "Last error"}},
		EmptyTitle: emptyTitle, EmptyWhy: emptyWhy,
	}
	if len(recs) >= outboxListLimit {
		p.Note = fmt.Sprintf("The first %d; look one up by id below.", outboxListLimit)
	}
	for _, r := range recs {
		id := itoa64(r.ID)
		next := views.Cell{Text: "—"}
		switch r.State {
		case queues.OutboxPending:
			next = views.Cell{Text: "now"}
			if r.AvailableAt.After(now) {
				next = ageCell(&r.AvailableAt, now)
			}
		case queues.OutboxInflight:
			next = views.Cell{Text: "leased by " + deref(r.LeaseOwner, "?"), Mono: true}
			if r.LeaseUntil != nil {
				next.Text += " until " + utc(*r.LeaseUntil)
			}
		}
		written := r.CreatedAt
		p.Rows = append(p.Rows, []views.Cell{
			{Text: id, Href: "/outbox?event_id=" + id, Mono: true},
			{Text: r.Topic, Mono: true},
			{Text: r.EventType, Mono: true},
			{Text: r.State},
			ageCell(&written, now),
			{Text: fmt.Sprintf("%d/%d", r.Attempts, r.MaxAttempts)},
			next,
			{Text: truncate(deref(r.LastError, ""), 120), Title: truncate(deref(r.LastError, ""), 1000)},
		})
	}
	return p
}

// outboxEventFacts describes an outbox event (nil: none with that id).
func outboxEventFacts(r *queues.OutboxRecord, now time.Time) ([]views.Fact, string) {
	if r == nil {
		return nil, ""
	}
	created := r.CreatedAt
	fs := []views.Fact{
		{Label: "Event", Value: itoa64(r.ID), Mono: true},
		{Label: "State", Value: r.State},
		{Label: "Topic", Value: r.Topic, Mono: true},
		{Label: "Type", Value: r.EventType, Mono: true},
		{Label: "Aggregate", Value: r.AggregateType + "/" + r.AggregateID, Mono: true},
		{Label: "Delivery attempts", Value: fmt.Sprintf("%d of %d", r.Attempts, r.MaxAttempts),
			Title: "every publish a relay started, answered or not (a consumer may have received each)"},
		{Label: "Broker acceptances", Value: fmt.Sprintf("%d", r.PublishCount)},
		timeFact("Created", &created, now),
		timeFact("Accepted by broker", r.AcceptedAt, now),
		timeFact("Marked published", r.PublishedAt, now),
	}
	if r.DeadAt != nil {
		fs = append(fs, timeFact("Died", r.DeadAt, now))
	}
	if r.LeaseOwner != nil {
		fs = append(fs, views.Fact{Label: "Lease owner", Value: *r.LeaseOwner, Mono: true}, timeFact("Lease until", r.LeaseUntil, now))
	}
	if r.LastError != nil {
		fs = append(fs, views.Fact{Label: "Last error", Value: truncate(*r.LastError, 300)})
	}
	return fs, prettyJSON(r.Payload)
}

// inboxPanel lists the consumers that applied an event.
func inboxPanel(entries []queues.InboxEntry, eventID string, now time.Time) views.Panel {
	p := views.Panel{
		ID: "inbox", Title: "Consumers that applied event " + eventID, Status: "ok",
		Columns:    []views.Column{{Label: "Consumer"}, {Label: "Processed"}},
		EmptyTitle: "No consumer has applied this event.",
		EmptyWhy:   " A consumer records each event it applies in its inbox in the same transaction; none has, so it was not delivered yet, or was rejected, or the inbox was pruned.",
	}
	for _, e := range entries {
		at := e.ProcessedAt
		p.Rows = append(p.Rows, []views.Cell{{Text: e.Consumer, Mono: true}, ageCell(&at, now)})
	}
	return p
}

// idempotencyFacts describes a stored request (nil: none for the key) and
// its stored response, or says it is missing.
func idempotencyFacts(r *queues.IdempotencyRecord, scope, key string, now time.Time) ([]views.Fact, string, string) {
	if r == nil {
		return nil, "", fmt.Sprintf("No request is stored for key %q in scope %q: a request with it never reached the database, or its record expired. Retrying it runs it again.", key, scope)
	}
	state := r.State
	switch r.State {
	case "completed":
		state = "completed: it took effect; a retry with the same key replays the stored response"
	case "processing":
		state = "processing: a request with this key is still running, or its worker died and the lock expires"
	}
	created, updated := r.CreatedAt, r.UpdatedAt
	fs := []views.Fact{
		{Label: "Scope", Value: r.Scope, Mono: true},
		{Label: "Key", Value: r.Key, Mono: true},
		{Label: "State", Value: state},
		{Label: "Request hash", Value: hex.EncodeToString(r.RequestHash), Mono: true},
		timeFact("Created", &created, now),
		timeFact("Updated", &updated, now),
	}
	if r.ResultCode != nil {
		fs = append(fs, views.Fact{Label: "Response code", Value: strconv.Itoa(*r.ResultCode), Mono: true})
	}
	if r.LockedUntil != nil {
		fs = append(fs, timeFact("Locked until", r.LockedUntil, now))
	}
	return fs, prettyJSON(r.ResultValue), ""
}

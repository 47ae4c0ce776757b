package views

// OutboxPage is /outbox: the backlog by state, the relay's settings, the
// dead events and the two lookups (inbox by event id, idempotency by key).
type OutboxPage struct {
	GeneratedAt  string       `json:"generated_at"`
	States       []Tile       `json:"states"`
	Relay        []Fact       `json:"relay"`
	RelayActions []ActionLink `json:"relay_actions"`
	Dead         Panel        `json:"dead"`
	// Stuck is the oldest undelivered events, Recent the newest events.
	Stuck  Panel        `json:"stuck"`
	Recent Panel        `json:"recent"`
	Lookup OutboxLookup `json:"lookup"`
	// History, when set, marks a page drawn from a recorded sample; it
	// does not refresh and has no lookups. Missing says why there is
	// nothing to show for that moment.
	History string `json:"history,omitempty"`
	Missing string `json:"missing,omitempty"`
}

// OutboxLookup is the lookup forms and, when asked, their answers: which
// consumers processed an event (and the event itself), and the stored
// request of an idempotency key.
type OutboxLookup struct {
	EventID string `json:"event_id,omitempty"`
	// Event is the outbox row with that id, when there is one.
	Event []Fact `json:"event,omitempty"`
	// EventPayload is the event's payload, pretty-printed.
	EventPayload string `json:"event_payload,omitempty"`
	Inbox        *Panel `json:"inbox,omitempty"`

	Scope       string `json:"scope,omitempty"`
	Key         string `json:"key,omitempty"`
	Idempotency []Fact `json:"idempotency,omitempty"`
	// Response is the stored response body, pretty-printed.
	Response string `json:"response,omitempty"`
	// Missing says the key has no stored request.
	Missing string `json:"missing,omitempty"`
}

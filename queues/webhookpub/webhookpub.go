package webhookpub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/pgconsole/console/queues"
)

// Config configures a Publisher.
type Config struct {
	// URL receives a POST per event. Required.
	URL string
	// Timeout bounds one request, connection included (default 10s); the
	// relay's PublishTimeout bounds it too.
	Timeout time.Duration
	// Headers are added to every request (an Authorization header, say).
	Headers map[string]string
	// Client is the HTTP client; nil builds one with Timeout.
	Client *http.Client
}

// Publisher publishes outbox events as HTTP POSTs of the payload, with
// the event id in the Idempotency-Key header so the receiver can drop a
// republish. Any 2xx answer is acceptance; a refusal of the event itself
// (400, 404, 410, 413, 415, 422) is permanent and sends it dead at once;
// anything else, or no answer, is a failure the relay retries.
type Publisher struct {
	cfg    Config
	client *http.Client
}

// New builds a webhook publisher.
func New(cfg Config) (*Publisher, error) {
	if cfg.URL == "" {
		return nil, errors.New("webhook publisher: URL is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	c := cfg.Client
	if c == nil {
		c = &http.Client{Timeout: cfg.Timeout}
	}
	return &Publisher{cfg: cfg, client: c}, nil
}

// Publish POSTs one event and drains the answer.
func (p *Publisher) Publish(ctx context.Context, m *queues.OutboxMessage) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.cfg.URL, bytes.NewReader(m.Payload))
	if err != nil {
		return fmt.Errorf("webhook request for event %d: %w", m.ID, err)
	}
	for k, v := range p.cfg.Headers {
		req.Header.Set(k, v)
	}
	for k, v := range m.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", m.EventID())
	req.Header.Set("Event-Topic", m.Topic)
	req.Header.Set("Event-Type", m.EventType)
	req.Header.Set("Aggregate-Type", m.AggregateType)
	req.Header.Set("Aggregate-Id", m.AggregateID)
	req.Header.Set("Event-Attempt", fmt.Sprint(m.Attempt))
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook post of event %d: %w", m.ID, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	err = fmt.Errorf("webhook post of event %d: status %d: %s", m.ID, resp.StatusCode, bytes.TrimSpace(body))
	if refusedForGood(resp.StatusCode) {
		return queues.Permanent(err)
	}
	return err
}

// refusedForGood says a status no retry will change: the receiver
// rejected the event itself (400, 404, 410, 413, 415, 422). Auth failures,
// timeouts, conflicts, rate limits and 5xx are retried.
func refusedForGood(code int) bool {
	switch code {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusGone, http.StatusRequestEntityTooLarge,
		http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

package actions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// params is a request's decoded parameters. Accessors parse one value,
// accept the string forms a form post sends, and return ErrInvalid with the
// parameter's name on a bad value.
type params map[string]any

func decodeParams(raw json.RawMessage, s Spec) (params, error) {
	p := params{}
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("params must be a JSON object: %w", ErrInvalid)
		}
	}
	known := map[string]bool{}
	for _, sp := range s.Params {
		known[sp.Name] = true
	}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if !known[k] {
			return nil, fmt.Errorf("%s has no parameter %q: %w", s.Name, k, ErrInvalid)
		}
	}
	for _, sp := range s.Params {
		if sp.Required && p.missing(sp.Name) {
			return nil, fmt.Errorf("%s needs %q: %w", s.Name, sp.Name, ErrInvalid)
		}
	}
	return p, nil
}

func (p params) missing(name string) bool {
	v, ok := p[name]
	if !ok || v == nil {
		return true
	}
	s, isStr := v.(string)
	return isStr && strings.TrimSpace(s) == ""
}

func invalid(name, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", name, fmt.Sprintf(format, args...), ErrInvalid)
}

func (p params) str(name string) (string, error) {
	if p.missing(name) {
		return "", nil
	}
	switch v := p[name].(type) {
	case string:
		return strings.TrimSpace(v), nil
	case json.Number:
		return v.String(), nil
	}
	return "", invalid(name, "must be a string")
}

func (p params) int(name string) (*int64, error) {
	if p.missing(name) {
		return nil, nil
	}
	var s string
	switch v := p[name].(type) {
	case json.Number:
		s = v.String()
	case string:
		s = strings.TrimSpace(v)
	default:
		return nil, invalid(name, "must be a whole number")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, invalid(name, "%q is not a whole number", s)
	}
	return &n, nil
}

func (p params) float(name string) (*float64, error) {
	if p.missing(name) {
		return nil, nil
	}
	var s string
	switch v := p[name].(type) {
	case json.Number:
		s = v.String()
	case string:
		s = strings.TrimSpace(v)
	default:
		return nil, invalid(name, "must be a number")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, invalid(name, "%q is not a number", s)
	}
	return &f, nil
}

func (p params) bool(name string) (*bool, error) {
	if p.missing(name) {
		return nil, nil
	}
	switch v := p[name].(type) {
	case bool:
		return &v, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "on", "yes", "1":
			b := true
			return &b, nil
		case "false", "off", "no", "0":
			b := false
			return &b, nil
		}
	}
	return nil, invalid(name, "must be true or false")
}

func (p params) time(name string) (*time.Time, error) {
	s, err := p.str(name)
	if err != nil || s == "" {
		return nil, err
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return &t, nil
		}
	}
	return nil, invalid(name, "%q is not a time (use RFC 3339, like 2026-01-02T15:04:05Z)", s)
}

func (p params) ints(name string) ([]int64, error) {
	if p.missing(name) {
		return nil, nil
	}
	var parts []string
	switch v := p[name].(type) {
	case []any:
		for _, e := range v {
			switch e := e.(type) {
			case json.Number:
				parts = append(parts, e.String())
			case string:
				parts = append(parts, e)
			default:
				return nil, invalid(name, "must be a list of whole numbers")
			}
		}
	case string:
		parts = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
	case json.Number:
		parts = []string{v.String()}
	default:
		return nil, invalid(name, "must be a list of whole numbers")
	}
	var out []int64
	for _, s := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n <= 0 {
			return nil, invalid(name, "%q is not a positive id", s)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// json returns a parameter as JSON. A string that holds JSON (a form's
// textarea) is parsed; nil means absent.
func (p params) json(name string) (json.RawMessage, error) {
	if p.missing(name) {
		return nil, nil
	}
	if s, ok := p[name].(string); ok {
		if !json.Valid([]byte(s)) {
			return nil, invalid(name, "is not valid JSON")
		}
		return json.RawMessage(s), nil
	}
	b, err := json.Marshal(p[name])
	if err != nil {
		return nil, invalid(name, "is not valid JSON")
	}
	return b, nil
}

func requirePositive(name string, v *int64) error {
	if v != nil && *v <= 0 {
		return invalid(name, "must be positive")
	}
	return nil
}

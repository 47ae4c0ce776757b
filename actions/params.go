package actions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A params struct holds one action's parameters as typed fields. Its fields
// method binds each struct field to its parameter: the name, type and
// description the API and the form show, and the decoder that fills the
// field. Code reads p.MaxWorkers, never a name, so a misspelt parameter does
// not compile instead of reading as "not given".
//
// Numbers and booleans also arrive as strings (a form posts strings); a
// string parameter refuses a JSON number or boolean, naming the field.
type paramSet interface {
	fields() []field
}

// noParams is the params struct of an action that takes none.
type noParams struct{}

func (*noParams) fields() []field { return nil }

// field is one parameter bound to the struct field its decode fills.
type field struct {
	Param
	decode func(raw json.RawMessage) error
}

// required marks the parameter as one the request must give.
func (f field) required() field { f.Required = true; return f }

// guard marks a parameter the preview fills for the execution's guard.
func (f field) guard() field { f.Guard = true; return f }

// oneOf fixes the values a string parameter may take; the form shows a
// select.
func (f field) oneOf(values ...string) field { f.Enum = values; return f }

func invalid(name, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", name, fmt.Sprintf(format, args...), ErrInvalid)
}

// kindOf names a JSON value's type for an error message.
func kindOf(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// text returns raw as a trimmed string when it is a JSON string.
func text(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return strings.TrimSpace(s), true
}

// numberText returns a JSON number, or a string holding one, as text.
func numberText(raw json.RawMessage) (string, bool) {
	if s, ok := text(raw); ok {
		return s, true
	}
	if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
		return string(raw), true
	}
	return "", false
}

func stringParam(dst *string, name, desc string) field {
	return field{Param{Name: name, Type: ParamString, Description: desc}, func(raw json.RawMessage) error {
		s, ok := text(raw)
		if !ok {
			return invalid(name, "must be a string, not %s", kindOf(raw))
		}
		*dst = s
		return nil
	}}
}

func parseInt(name string, raw json.RawMessage) (int64, error) {
	s, ok := numberText(raw)
	if !ok {
		return 0, invalid(name, "must be a whole number, not %s", kindOf(raw))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, invalid(name, "%q is not a whole number", s)
	}
	return n, nil
}

// intParam binds a required whole number.
func intParam(dst *int64, name, desc string) field {
	return field{Param{Name: name, Type: ParamInt, Description: desc}, func(raw json.RawMessage) (err error) {
		*dst, err = parseInt(name, raw)
		return err
	}}
}

// optIntParam binds a whole number that may be absent (nil).
func optIntParam(dst **int64, name, desc string) field {
	return field{Param{Name: name, Type: ParamInt, Description: desc}, func(raw json.RawMessage) error {
		n, err := parseInt(name, raw)
		if err == nil {
			*dst = &n
		}
		return err
	}}
}

// numberParam binds a number that may be absent (nil), refused outside
// [lo, hi]: every number an action takes has a range, so a rate of 1e19 or
// 5e-324 never reaches the engine's arithmetic.
func numberParam(dst **float64, name, desc string, lo, hi float64) field {
	return field{Param{Name: name, Type: ParamNumber, Description: desc}, func(raw json.RawMessage) error {
		s, ok := numberText(raw)
		if !ok {
			return invalid(name, "must be a number, not %s", kindOf(raw))
		}
		f, err := strconv.ParseFloat(s, 64)
		outOfRange := errors.Is(err, strconv.ErrRange)
		if (err != nil && !outOfRange) || math.IsNaN(f) || (math.IsInf(f, 0) && !outOfRange) {
			return invalid(name, "%q is not a number between %g and %g", s, lo, hi)
		}
		if outOfRange || f < lo || f > hi {
			return invalid(name, "%s is out of range: give a number between %g and %g", s, lo, hi)
		}
		*dst = &f
		return nil
	}}
}

func boolParam(dst *bool, name, desc string) field {
	return field{Param{Name: name, Type: ParamBool, Description: desc}, func(raw json.RawMessage) error {
		s, ok := text(raw)
		if !ok {
			s = string(raw)
		}
		switch strings.ToLower(s) {
		case "true", "on", "yes", "1":
			*dst = true
			return nil
		case "false", "off", "no", "0":
			*dst = false
			return nil
		}
		return invalid(name, "must be true or false")
	}}
}

// optBoolParam binds a boolean that may be absent (nil keeps what is
// stored).
func optBoolParam(dst **bool, name, desc string) field {
	var b bool
	f := boolParam(&b, name, desc)
	decode := f.decode
	f.decode = func(raw json.RawMessage) error {
		if err := decode(raw); err != nil {
			return err
		}
		*dst = &b
		return nil
	}
	return f
}

// Times an action takes lie in [minTime, maxTime]; a time that says "before
// now" may be at most clockSkew ahead of this server's clock.
var (
	minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

const clockSkew = 5 * time.Minute

// timeParam binds a time that may be absent (nil).
func timeParam(dst **time.Time, name, desc string) field {
	return field{Param{Name: name, Type: ParamTime, Description: desc}, func(raw json.RawMessage) error {
		s, ok := text(raw)
		if !ok {
			return invalid(name, "must be a time string (RFC 3339), not %s", kindOf(raw))
		}
		t, ok := parseTime(s)
		if !ok {
			return invalid(name, "%q is not a time (use RFC 3339, like 2026-01-02T15:04:05Z)", s)
		}
		if t.Before(minTime) || t.After(maxTime) {
			return invalid(name, "%q is out of range: give a time between 1970 and 9999", s)
		}
		*dst = &t
		return nil
	}}
}

// parseTime reads RFC 3339, or a form's date and time (UTC), or a date.
func parseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// notFuture refuses a time later than now (give or take clockSkew), for a
// time parameter that says when something already happened.
func (f field) notFuture(now func() time.Time) field {
	decode := f.decode
	f.decode = func(raw json.RawMessage) error {
		if err := decode(raw); err != nil {
			return err
		}
		s, _ := text(raw)
		if t, _ := parseTime(s); t.After(now().Add(clockSkew)) {
			return invalid(f.Name, "%q is in the future: give a time before now", s)
		}
		return nil
	}
	return f
}

// checkText refuses a value the database cannot store as text or jsonb:
// bytes that are not UTF-8, and NUL characters (raw, or escaped as \u0000
// anywhere in a JSON value).
func checkText(name string, raw json.RawMessage) error {
	if !utf8.Valid(raw) {
		return invalid(name, "is not valid UTF-8 text")
	}
	if bytes.IndexByte(raw, 0) >= 0 || hasNUL(raw) {
		return invalid(name, "contains a NUL character (\\u0000), which cannot be stored")
	}
	return nil
}

// hasNUL reports whether a JSON value holds a NUL in any string or key.
func hasNUL(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`\u0000`)) {
		return false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return true
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			return strings.IndexByte(x, 0) >= 0
		case []any:
			return slices.ContainsFunc(x, walk)
		case map[string]any:
			for k, e := range x {
				if strings.IndexByte(k, 0) >= 0 || walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// idsParam binds a list of positive ids: a JSON list, one number, or a
// comma-separated string (a form's text input). The ids come sorted, without
// repeats.
func idsParam(dst *[]int64, name, desc string) field {
	return field{Param{Name: name, Type: ParamIntList, Description: desc}, func(raw json.RawMessage) error {
		var parts []string
		if s, ok := text(raw); ok {
			parts = strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
		} else if raw[0] == '[' {
			var list []json.RawMessage
			if json.Unmarshal(raw, &list) != nil {
				return invalid(name, "must be a list of whole numbers")
			}
			for _, e := range list {
				s, ok := numberText(e)
				if !ok {
					return invalid(name, "must be a list of whole numbers")
				}
				parts = append(parts, s)
			}
		} else if s, ok := numberText(raw); ok {
			parts = []string{s}
		} else {
			return invalid(name, "must be a list of whole numbers, not %s", kindOf(raw))
		}
		var out []int64
		for _, s := range parts {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil || n <= 0 {
				return invalid(name, "%q is not a positive id", s)
			}
			out = append(out, n)
		}
		slices.Sort(out)
		*dst = slices.Compact(out)
		return nil
	}}
}

// jsonParam binds any JSON value (a job payload). A string that holds JSON
// (a form's textarea) is parsed.
func jsonParam(dst *json.RawMessage, name, desc string) field {
	return field{Param{Name: name, Type: ParamJSON, Description: desc}, func(raw json.RawMessage) error {
		if s, ok := text(raw); ok {
			if !json.Valid([]byte(s)) {
				return invalid(name, "is not valid JSON")
			}
			raw = json.RawMessage(s)
		}
		*dst = slices.Clone(raw)
		return nil
	}}
}

// absent reports a parameter that was not given: missing, null or a blank
// string (an empty form input).
func absent(raw json.RawMessage, ok bool) bool {
	if !ok || string(raw) == "null" {
		return true
	}
	s, isText := text(raw)
	return isText && s == ""
}

// decodeParams fills the fields bound in fs from raw, a JSON object. It
// refuses a parameter the action does not have, a missing required one, and
// a value of the wrong type, naming the parameter each time.
func decodeParams(raw json.RawMessage, action string, fs []field) error {
	obj := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
		if t[0] != '{' || json.Unmarshal(t, &obj) != nil {
			return fmt.Errorf("params must be a JSON object: %w", ErrInvalid)
		}
	}
	known := map[string]bool{}
	for _, f := range fs {
		known[f.Name] = true
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !known[k] {
			return fmt.Errorf("%s has no parameter %q: %w", action, k, ErrInvalid)
		}
	}
	for _, f := range fs {
		if v, ok := obj[f.Name]; f.Required && absent(v, ok) {
			return fmt.Errorf("%s needs %q: %w", action, f.Name, ErrInvalid)
		}
	}
	for _, f := range fs {
		if v, ok := obj[f.Name]; ok {
			if err := checkText(f.Name, v); err != nil {
				return fmt.Errorf("%s: %w", action, err)
			}
		}
	}
	for _, f := range fs {
		if v, ok := obj[f.Name]; !absent(v, ok) {
			if err := f.decode(bytes.TrimSpace(v)); err != nil {
				return fmt.Errorf("%s: %w", action, err)
			}
		}
	}
	return nil
}

func requirePositive(name string, v int64) error {
	if v <= 0 {
		return invalid(name, "must be positive")
	}
	return nil
}

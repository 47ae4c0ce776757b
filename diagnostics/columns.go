package diagnostics

import (
	"encoding/json"
	"strconv"
	"time"
)

// Format says how a panel shows the values of one column. The console's
// pages turn a Format into text; the check that owns the column only says
// which Format fits.
type Format int

// Formats of a Column.
const (
	// AsText is a string as is; an empty one shows as a dash.
	AsText Format = iota
	// AsCode is a string in monospace: an LSN, a gid, an xmin.
	AsCode
	// AsQuery is SQL text: shortened, with the whole text on hover.
	AsQuery
	// AsCount is an integer with thousands separators.
	AsCount
	// AsID is an integer identifier (a pid): monospace, no separators.
	AsID
	// AsNumber is a decimal number as is.
	AsNumber
	// AsSeconds is a duration in seconds, shown as "4m12s".
	AsSeconds
	// AsBytes is a size in bytes, shown as "1.5 MiB".
	AsBytes
	// AsRate is an amount per second.
	AsRate
	// AsPercent is a fraction from 0 to 1, shown as a percentage.
	AsPercent
	// AsAge is a point in time, shown as its age.
	AsAge
	// AsYesNo is a boolean, shown as yes or no.
	AsYesNo
	// AsIDList is a list of integer identifiers (pids), comma
	// separated.
	AsIDList
	// AsNameList is a list of names (queues), each quoted, comma
	// separated.
	AsNameList
)

// Numeric reports whether values of the format are numbers, which tables
// align right.
func (f Format) Numeric() bool {
	switch f {
	case AsCount, AsID, AsNumber, AsSeconds, AsBytes, AsRate, AsPercent:
		return true
	}
	return false
}

// Value is one cell of a panel before it is formatted: Null for SQL NULL,
// otherwise the field that fits the column's Format (Int and Float both
// hold an integer; Float holds every other number).
type Value struct {
	Null  bool
	Text  string
	Int   int64
	Float float64
	Bool  bool
	Time  time.Time
	List  []string
}

// Column is one column of a check's panel: the row field it shows, named
// as in the row's JSON (the heading is made from it), and how to show it.
type Column struct {
	Name   string
	Format Format
	value  func(row any) Value
	// rows decodes a JSON list of the column's row type (what a capture
	// or the API serves) back into rows this column reads.
	rows func(data json.RawMessage, at time.Time) ([]any, error)
}

// Value reads the column's value from one row of its check. A row of
// another type reads as Null.
func (c Column) Value(row any) Value { return c.value(row) }

// integer is the Go types of integer columns.
type integer interface{ ~int | ~int32 | ~int64 }

// column adapts a typed accessor to Column; rows of another type read as
// Null.
func column[T any](name string, f Format, get func(T) Value) Column {
	return Column{Name: name, Format: f, value: func(row any) Value {
		r, ok := row.(T)
		if !ok {
			return Value{Null: true}
		}
		return get(r)
	}, rows: recorded[T]}
}

// nullable reads a field that may be NULL (a nil pointer).
func nullable[T, V any](get func(T) *V, value func(V) Value) func(T) Value {
	return func(r T) Value {
		if p := get(r); p != nil {
			return value(*p)
		}
		return Value{Null: true}
	}
}

func textValue(s string) Value { return Value{Text: s} }

func intValue[N integer](n N) Value { return Value{Int: int64(n), Float: float64(n)} }

func floatValue(f float64) Value { return Value{Float: f} }

func timeValue(t time.Time) Value { return Value{Time: t} }

func textCol[T any](name string, f Format, get func(T) string) Column {
	return column(name, f, func(r T) Value { return textValue(get(r)) })
}

func optTextCol[T any](name string, f Format, get func(T) *string) Column {
	return column(name, f, nullable(get, textValue))
}

func intCol[T any, N integer](name string, f Format, get func(T) N) Column {
	return column(name, f, func(r T) Value { return intValue(get(r)) })
}

func optIntCol[T any, N integer](name string, f Format, get func(T) *N) Column {
	return column(name, f, nullable(get, intValue[N]))
}

func floatCol[T any](name string, f Format, get func(T) float64) Column {
	return column(name, f, func(r T) Value { return floatValue(get(r)) })
}

func optFloatCol[T any](name string, f Format, get func(T) *float64) Column {
	return column(name, f, nullable(get, floatValue))
}

func boolCol[T any](name string, get func(T) bool) Column {
	return column(name, AsYesNo, func(r T) Value { return Value{Bool: get(r)} })
}

func timeCol[T any](name string, get func(T) time.Time) Column {
	return column(name, AsAge, func(r T) Value { return timeValue(get(r)) })
}

func optTimeCol[T any](name string, get func(T) *time.Time) Column {
	return column(name, AsAge, nullable(get, timeValue))
}

// idsCol shows a list of identifiers (pids, event ids); a nil list is
// NULL.
func idsCol[T any, N integer](name string, get func(T) []N) Column {
	return column(name, AsIDList, func(r T) Value {
		ids := get(r)
		if ids == nil {
			return Value{Null: true}
		}
		list := make([]string, len(ids))
		for i, id := range ids {
			list[i] = strconv.FormatInt(int64(id), 10)
		}
		return Value{List: list}
	})
}

// namesCol shows a list of names; a nil list is NULL.
func namesCol[T any](name string, get func(T) []string) Column {
	return column(name, AsNameList, func(r T) Value {
		if names := get(r); names != nil {
			return Value{List: names}
		}
		return Value{Null: true}
	})
}

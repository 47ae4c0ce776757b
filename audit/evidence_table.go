package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// EvidenceTable is a captured panel as a table: the columns of its rows in
// the order the panel returned them, and each cell as text.
type EvidenceTable struct {
	Status  string
	Error   string
	Columns []string
	Rows    [][]string
	// Total is how many rows were captured; Rows holds at most the limit
	// given to Table.
	Total int
	// MoreColumns counts columns left out before the table was made.
	MoreColumns int
	// AsOf is when the rows were read, when the caller knows it; zero
	// means when they were captured.
	AsOf time.Time
}

// Table reads a capture's data ({"status", "rows", "error", "columns"},
// or a bare list of rows) as a table of at most limit rows. Columns are the capture's columns when it
// names them (the panel's, in its order), otherwise every key of the rows
// in first-seen order. Nested values are written as compact JSON, null as
// an empty cell.
func (e Evidence) Table(limit int) (EvidenceTable, error) {
	var v struct {
		Status  string            `json:"status"`
		Error   string            `json:"error"`
		Rows    []json.RawMessage `json:"rows"`
		Columns []string          `json:"columns"`
	}
	if trimmed := bytes.TrimSpace(e.Data); len(trimmed) > 0 && trimmed[0] == '[' {
		v.Status = "ok" // a bare list of rows
		if err := json.Unmarshal(trimmed, &v.Rows); err != nil {
			return EvidenceTable{}, fmt.Errorf("evidence %d is not a captured panel: %w", e.ID, err)
		}
	} else if err := json.Unmarshal(e.Data, &v); err != nil {
		return EvidenceTable{}, fmt.Errorf("evidence %d is not a captured panel: %w", e.ID, err)
	}
	t := EvidenceTable{Status: v.Status, Error: v.Error, Total: len(v.Rows)}
	var err error
	if t.Columns, t.Rows, err = tableOf(v.Rows, limit); err != nil {
		return EvidenceTable{}, fmt.Errorf("evidence %d: %w", e.ID, err)
	}
	if len(v.Columns) > 0 {
		t.Columns, t.Rows = pick(t.Columns, t.Rows, v.Columns)
	}
	return t, nil
}

// pick keeps the columns named in want, in want's order.
func pick(columns []string, rows [][]string, want []string) ([]string, [][]string) {
	at := map[string]int{}
	for i, c := range columns {
		at[c] = i
	}
	out := make([][]string, len(rows))
	for r, row := range rows {
		out[r] = make([]string, len(want))
		for j, c := range want {
			if i, ok := at[c]; ok {
				out[r][j] = row[i]
			}
		}
	}
	return want, out
}

// tableOf lays out at most limit JSON objects as rows under the union of
// their keys, in first-seen order.
func tableOf(objects []json.RawMessage, limit int) (columns []string, rows [][]string, err error) {
	index := map[string]int{}
	for i, raw := range objects {
		if i == limit {
			break
		}
		keys, vals, err := orderedObject(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("row %d: %w", i+1, err)
		}
		row := make([]string, len(columns), len(columns)+len(keys))
		for k, key := range keys {
			j, ok := index[key]
			if !ok {
				j = len(columns)
				index[key] = j
				columns = append(columns, key)
			}
			for len(row) <= j {
				row = append(row, "")
			}
			row[j] = vals[k]
		}
		rows = append(rows, row)
	}
	for i := range rows {
		for len(rows[i]) < len(columns) {
			rows[i] = append(rows[i], "")
		}
	}
	return columns, rows, nil
}

// orderedObject reads one JSON object's keys in order and its values as
// cell text.
func orderedObject(raw json.RawMessage) (keys, vals []string, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, nil, err
		}
		keys = append(keys, tok.(string))
		vals = append(vals, cellText(val))
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, nil, err
	}
	return keys, vals, nil
}

func cellText(val json.RawMessage) string {
	s := strings.TrimSpace(string(val))
	switch {
	case s == "null":
		return ""
	case strings.HasPrefix(s, `"`):
		var str string
		if json.Unmarshal(val, &str) == nil {
			return str
		}
	case strings.HasPrefix(s, "{"), strings.HasPrefix(s, "["):
		var buf bytes.Buffer
		if json.Compact(&buf, val) == nil {
			return buf.String()
		}
	}
	return s
}

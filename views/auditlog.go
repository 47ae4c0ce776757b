package views

// AuditFilter is the /audit filter form as the operator typed it.
type AuditFilter struct {
	Actor    string   `json:"actor,omitempty"`
	Action   string   `json:"action,omitempty"`
	Target   string   `json:"target,omitempty"`
	Outcome  string   `json:"outcome,omitempty"`
	Incident string   `json:"incident,omitempty"`
	Limit    string   `json:"limit,omitempty"`
	Outcomes []string `json:"-"`
}

// AuditChain is the result of verifying the hash chain.
type AuditChain struct {
	OK      bool   `json:"ok"`
	Checked string `json:"checked"`
	// Message says what broke, or that verification could not run.
	Message string `json:"message,omitempty"`
	Sev     string `json:"-"`
}

// AuditRow is one audited attempt.
type AuditRow struct {
	ID         int64  `json:"id"`
	At         Age    `json:"at"`
	Actor      string `json:"actor"`
	Role       string `json:"role"`
	Action     string `json:"action"`
	Target     string `json:"target"`
	Outcome    string `json:"outcome"`
	OutcomeSev string `json:"-"`
	Reason     string `json:"reason,omitempty"`
	Error      string `json:"error,omitempty"`
	// Incident links to the incident the attempt was part of.
	Incident     string `json:"incident,omitempty"`
	IncidentHref string `json:"incident_href,omitempty"`
	// Params, Preview and Result are pretty-printed JSON ("" when empty).
	Params  string `json:"params,omitempty"`
	Preview string `json:"preview,omitempty"`
	Result  string `json:"result,omitempty"`
}

// AuditPage is /audit: the chain status, the filter and one keyset page.
type AuditPage struct {
	Chain     AuditChain  `json:"chain"`
	Filter    AuditFilter `json:"filter"`
	Events    []AuditRow  `json:"events"`
	OlderHref string      `json:"older_href,omitempty"`
	FirstHref string      `json:"first_href,omitempty"`
	// Filtered is true when any filter is set (for the empty state).
	Filtered bool `json:"filtered"`
}

// auditChainKind is the alert style of the chain status: ok when verified,
// info when not checked on this page, error otherwise.
func auditChainKind(c AuditChain) string {
	switch {
	case c.OK:
		return "ok"
	case c.Sev == "info":
		return "info"
	}
	return "error"
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

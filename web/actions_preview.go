package web

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"maps"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/actions"
)

// previewSeal is what the console's Execute button carries: the action, the
// parameters it was previewed with, the preview's sentence and the version
// of the state it saw, signed for this session. Execution re-previews and
// refuses when the version moved, so what runs is what the operator read.
type previewSeal struct {
	Action  string            `json:"action"`
	Params  map[string]string `json:"params"`
	Summary string            `json:"summary"`
	Version string            `json:"version"`
}

// The refusals of an execution whose preview is missing, altered or stale.
const (
	msgNoPreview = "Execute needs a preview first: nothing was done. Press Preview, read what the action will do, then Execute."
	msgBadSeal   = "This preview's signature does not match (the page was altered, or it comes from another session or an " +
		"older version of the console): nothing was done. Preview again."
	msgParamsChanged = "The parameters differ from the ones previewed: nothing was done. Preview again with the new values."
)

// sealPreview signs a preview for the execution form. The HMAC is the CSRF
// key's, over a binding of its own that includes the session's CSRF token,
// so a seal works only for the session it was shown to.
func (s *Server) sealPreview(c echo.Context, seal previewSeal) string {
	payload, _ := json.Marshal(seal) // a struct of strings always encodes
	return base64.RawURLEncoding.EncodeToString(payload) + "." + s.previewMAC(c, payload)
}

func (s *Server) previewMAC(c echo.Context, payload []byte) string {
	return s.csrfFor("preview\x00" + rawCSRF(c) + "\x00" + string(payload))
}

// openSeal checks a seal's signature and returns what it says; ok is false
// for a seal this session was not given, or one altered since.
func (s *Server) openSeal(c echo.Context, token string) (previewSeal, bool) {
	enc, mac, found := strings.Cut(token, ".")
	if !found {
		return previewSeal{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || !hmac.Equal([]byte(mac), []byte(s.previewMAC(c, payload))) {
		return previewSeal{}, false
	}
	var seal previewSeal
	if json.Unmarshal(payload, &seal) != nil {
		return previewSeal{}, false
	}
	if seal.Params == nil {
		seal.Params = map[string]string{}
	}
	return seal, true
}

// checkSeal refuses an execution whose seal is missing, altered, for
// another action, or for other parameters than the ones posted (the
// confirmation is typed at execution and not part of the seal).
func (s *Server) checkSeal(c echo.Context, spec actions.Spec, values map[string]string) (previewSeal, string) {
	token := c.FormValue("preview")
	if token == "" {
		return previewSeal{}, msgNoPreview
	}
	seal, ok := s.openSeal(c, token)
	if !ok || seal.Action != spec.Name {
		return previewSeal{}, msgBadSeal
	}
	posted := maps.Clone(values)
	delete(posted, spec.Confirm)
	if !maps.Equal(posted, seal.Params) {
		return previewSeal{}, msgParamsChanged
	}
	return seal, ""
}

// withoutGuards drops the parameters a preview fills for the guards
// (a backend's fingerprint), so a new preview takes them afresh.
func withoutGuards(spec actions.Spec, values map[string]string) map[string]string {
	out := maps.Clone(values)
	for _, p := range spec.Params {
		if p.Guard || p.Name == spec.Confirm {
			delete(out, p.Name)
		}
	}
	return out
}

package web

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/views"
)

// timelineItem is an incident timeline entry with the moment it sorts by.
type timelineItem struct {
	at    time.Time
	entry views.TimelineEntry
}

// episodeLead is how long before the incident's window an episode may
// have started and still overlap it: the longest lock wait the timeline
// looks back for.
const episodeLead = time.Hour

// incidentEpisodes reads the lock episodes that overlap the incident's
// window (from its start, to its end or now), as timeline items. A read
// that fails is one item saying so: the rest of the page stands.
func (s *Server) incidentEpisodes(ctx context.Context, inc *audit.Incident, now time.Time) []timelineItem {
	from, to := inc.WindowStart, now
	if inc.WindowEnd != nil {
		to = *inc.WindowEnd
	}
	eps, err := episodes.List(ctx, s.cfg.Pool, episodes.ListParams{Since: from.Add(-episodeLead), Until: to})
	if err != nil {
		return []timelineItem{{at: from, entry: views.TimelineEntry{At: age(from, now), Kind: "episode",
			Title: "the lock episodes could not be read", Who: "the lock-episode recorder", Detail: err.Error()}}}
	}
	return episodeTimelineItems(eps, from, to, now)
}

// episodeTimelineItems lays out the episodes that overlap from–to as
// timeline items, oldest first: start, duration, the root's application,
// who waited and the jobs and claims held up, linked to the episode on the
// lock-episodes page. No I/O.
func episodeTimelineItems(eps []episodes.Episode, from, to, now time.Time) []timelineItem {
	var out []timelineItem
	for _, e := range eps {
		end := e.Start.Add(e.Duration())
		if end.Before(from) || e.Start.After(to) {
			continue
		}
		root := fmt.Sprintf("pid %d (%s)", e.RootPID, orDash(e.RootApplication))
		if e.RootPID == 0 {
			root = "a prepared transaction"
		}
		lock := strings.TrimSpace(e.LockMode + " on " + orDash(e.LockTarget))
		detail := []string{fmt.Sprintf("started %s, lasted %s", e.Start.UTC().Format("15:04:05.0Z"), humanize.SecondsTenths(e.Duration().Seconds()))}
		if e.End == nil {
			detail[0] = fmt.Sprintf("started %s, still waiting at the last look (%s so far)", e.Start.UTC().Format("15:04:05.0Z"), humanize.SecondsTenths(e.Duration().Seconds()))
		} else if !e.EndSeen {
			detail[0] += " at least (the recording console stopped before the end)"
		}
		detail = append(detail, fmt.Sprintf("%d %s waiting at most, %s waited in all", e.PeakWaiting, plural(e.PeakWaiting, "session", "sessions"),
			humanize.SecondsTenths(e.WaitedSeconds)))
		if e.JobsDelayed > 0 {
			detail = append(detail, fmt.Sprintf("%d %s delayed", e.JobsDelayed, plural(e.JobsDelayed, "job", "jobs")))
		}
		if e.ClaimsDelayed > 0 {
			detail = append(detail, fmt.Sprintf("%d job %s of the engine held up", e.ClaimsDelayed, plural(e.ClaimsDelayed, "claim", "claims")))
		}
		if len(e.Applications) > 0 {
			detail = append(detail, "applications: "+strings.Join(e.Applications, ", "))
		}
		out = append(out, timelineItem{at: e.Start, entry: views.TimelineEntry{At: age(e.Start, now), Kind: "episode",
			Title: fmt.Sprintf("Lock wait behind %s: %s", root, lock), Who: "the lock-episode recorder (" + e.RecordedBy + ")",
			Detail: strings.Join(detail, " · "), Href: episodeHref(e)}})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// episodeHref is the episode on the lock-episodes page: the episodes of its
// root's application from the second it started, at its card.
func episodeHref(e episodes.Episode) string {
	v := url.Values{"since": {e.Start.UTC().Truncate(time.Second).Format(time.RFC3339)}}
	if e.RootApplication != "" {
		v.Set("application", e.RootApplication)
	}
	return fmt.Sprintf("/lock-episodes?%s#episode-%d", v.Encode(), e.ID)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A configuration value that does not parse stops the start with a
// sentence naming the variable, the value and what is accepted; it never
// quietly means the default.
func TestBadConfigurationIsRefused(t *testing.T) {
	for _, tc := range []struct {
		cmd, key, value, says string
	}{
		{"serve", "CONSOLE_SECURE_COOKIES", "yes", "true or false"},
		{"serve", "CONSOLE_MIGRATE", "please", "true or false"},
		{"serve", "CONSOLE_PROXY_ROLE_HEADER", "on", "true or false"},
		{"serve", "CONSOLE_SIGNAL_ANY_DATABASE", "2", "true or false"},
		{"serve", "CONSOLE_HISTORY_INTERVAL", "10", "duration with its unit"},
		{"serve", "CONSOLE_HISTORY_INTERVAL", "0s", "use 1s to 10m"},
		{"serve", "CONSOLE_JOB_RETENTION", "7", "duration with its unit"},
		{"serve", "CONSOLE_JOB_RETENTION", "10m", "use 0 (keep every done job) or at least 1h"},
		{"worker", "CONSOLE_JOB_RETENTION", "7d", "duration with its unit"},
		{"worker", "CONSOLE_JOB_RETENTION", "30s", "at least 1h"},
		{"serve", "CONSOLE_EPISODE_INTERVAL", "1", "duration with its unit"},
		{"serve", "CONSOLE_EPISODE_INTERVAL", "10ms", "use 100ms to 1m, or 0"},
		{"serve", "CONSOLE_SLOW_INTERVAL", "2", "duration with its unit"},
		{"serve", "CONSOLE_SLOW_INTERVAL", "1s", "use 10s to 1h"},
		{"serve", "CONSOLE_METRICS", "public", "use open, token or off"},
		{"serve", "CONSOLE_QUEUE_SOURCE", "sidekiq", "use auto (River's tables when they hold the jobs), console"},
		{"findings", "CONSOLE_QUEUE_SOURCE", "sidekiq", "use auto (River's tables when they hold the jobs), console"},
		{"serve", "CONSOLE_REQUIRE_DATABASE_URL", "yes", "true or false"},
		{"serve", "CONSOLE_PROXY_ROLES", "alice=root", "USER=ROLE"},
		{"serve", "CONSOLE_THRESHOLDS", "queue.backlog=soon", "queue.backlog"},
		{"worker", "CONSOLE_CONCURRENCY", "ten", "whole number"},
		{"worker", "CONSOLE_LEASE", "30", "duration with its unit"},
		{"worker", "CONSOLE_POLL", "1", "duration with its unit"},
		{"worker", "CONSOLE_DRAIN", "soon", "duration with its unit"},
		{"worker", "CONSOLE_ALLOW_SQL_JOBS", "yes", "true or false"},
		{"worker", "CONSOLE_CONCURRENCY", "0", "use 1 to 10000"},
		{"worker", "CONSOLE_LEASE", "500ms", "at least 1s"},
		{"worker", "CONSOLE_DRAIN", "2h", "use 100ms to 1h"},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			out, err := runCmd(t, envMap(tc.key, tc.value, "DATABASE_URL", "postgres://nobody@127.0.0.1:1/none"), tc.cmd)
			require.Error(t, err, "started with %s=%q: %s", tc.key, tc.value, out)
			require.Contains(t, err.Error(), tc.says)
			if tc.key != "CONSOLE_THRESHOLDS" {
				require.Contains(t, err.Error(), tc.key, "the sentence names the variable")
			}
			require.Contains(t, err.Error(), tc.value, "the sentence names the value")
		})
	}
}

// A variable applies when its flag is not given; the flag wins over it.
func TestEnvironmentStandsInForFlags(t *testing.T) {
	c, err := parseServe(nil, envMap("CONSOLE_HISTORY_INTERVAL", "30s", "CONSOLE_SECURE_COOKIES", "true", "CONSOLE_ADDR", "127.0.0.1:9999"))
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, c.HistoryInterval)
	require.True(t, c.SecureCookies)
	require.Equal(t, "127.0.0.1:9999", c.Addr)
	c, err = parseServe([]string{"--history-interval", "5s"}, envMap("CONSOLE_HISTORY_INTERVAL", "not parsed"))
	require.NoError(t, err, "the command line wins; the variable is not read")
	require.Equal(t, 5*time.Second, c.HistoryInterval)
	c, err = parseServe(nil, envMap())
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, c.HistoryInterval, "the default")
	require.Equal(t, time.Second, c.EpisodeInterval, "lock waits are looked for every second by default")
	c, err = parseServe(nil, envMap("CONSOLE_EPISODE_INTERVAL", "0"))
	require.NoError(t, err)
	require.Zero(t, c.EpisodeInterval, "0 turns the lock-episode recorder off")
	require.Equal(t, 2*time.Minute, c.SlowInterval, "the default")
	c, err = parseServe(nil, envMap("CONSOLE_SLOW_INTERVAL", "5m"))
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, c.SlowInterval)
	require.Equal(t, "127.0.0.1:8080", c.Addr)
}

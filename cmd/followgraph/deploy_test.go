package main

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

// The files under deploy/ that name metrics and flags, from this folder.
const (
	dashboardFile = "../../deploy/grafana/followgraph.json"
	alertsFile    = "../../deploy/prometheus/alerts.yml"
	composeFile   = "../../deploy/compose/compose.yaml"
	haComposeFile = "../../deploy/compose/ha.yaml"
	unitFile      = "../../deploy/systemd/followgraph.service"
	containerFile = "../../Containerfile"
)

// metricName matches the names of the metrics serve exports (its own, the
// Go runtime's and the process's) in a PromQL expression; `up`, which
// Prometheus makes itself, is not one.
var metricName = regexp.MustCompile(`\b(?:followgraph|go|process)_[a-z0-9_]+`)

// dashboardQueries returns every PromQL expression of the dashboard: each
// panel's targets and the variables' queries.
func dashboardQueries(tb testing.TB) []string {
	tb.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		tb.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Type       string
				Definition string
			}
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		tb.Fatalf("%s: %v", dashboardFile, err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		for _, t := range p.Targets {
			if t.Expr == "" {
				tb.Errorf("%s: panel %q has a target without expr", dashboardFile, p.Title)
			}
			exprs = append(exprs, t.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type == "query" {
			exprs = append(exprs, v.Definition)
		}
	}
	return exprs
}

// alertExprs returns the expression of each alert rule, by alert name.
func alertExprs(tb testing.TB) map[string]string {
	tb.Helper()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		tb.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		tb.Fatalf("%s: %v", alertsFile, err)
	}
	exprs := map[string]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs[r.Alert] = r.Expr
		}
	}
	return exprs
}

// exported returns the names of the samples in s's /metrics after a few
// writes, reads and an error, so that each labelled family has a child.
func exported(tb testing.TB, s *server) map[string]bool {
	tb.Helper()
	ctx := context.Background()
	if _, err := s.client.Follow(ctx, 1, 2); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.client.Follow(ctx, 1, 1); fg.ErrorCode(err) != fg.ESelfFollow {
		tb.Fatalf("self-follow: %v, want %s", err, fg.ESelfFollow)
	}
	if _, err := s.client.Following(ctx, 1, fg.PageRequest{Limit: 10}); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return names
}

// TestDeploy_MetricsExist: every metric that a panel of the dashboard or
// an alert rule names is one a running server exports, in the embedded
// mode or on Redis (the relay's, the cache's, the Cluster's).
func TestDeploy_MetricsExist(t *testing.T) {
	url, prefix := testRedis(t)
	names := exported(t, start(t, t.TempDir()))
	maps.Copy(names, exported(t, start(t, t.TempDir(), "--redis", url, "--redis-prefix", prefix)))
	maps.Copy(names, exported(t, start(t, t.TempDir(), "--region", "a", "--region-peers", "b")))

	check := func(t *testing.T, where string, exprs []string) {
		seen := 0
		for _, e := range exprs {
			for _, name := range metricName.FindAllString(e, -1) {
				seen++
				if !names[name] {
					t.Errorf("%s names %s, which serve does not export: %s", where, name, e)
				}
			}
		}
		if seen == 0 {
			t.Errorf("%s names no metric: the test reads it wrong", where)
		}
	}
	t.Run("Dashboard", func(t *testing.T) { check(t, dashboardFile, dashboardQueries(t)) })
	t.Run("Alerts", func(t *testing.T) {
		for alert, expr := range alertExprs(t) {
			if alert == "FollowgraphDown" { // on Prometheus's own `up`
				continue
			}
			check(t, alertsFile+" "+alert, []string{expr})
		}
	})
}

// TestDeploy_QueriesParse: each query of the dashboard is PromQL that
// Prometheus parses (promtool checks them as recording rules, with
// Grafana's variables given values), as the alert rules are by `promtool
// check rules` in CI.
func TestDeploy_QueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Skip(t, "promtool is not installed: apt-get install prometheus")
	}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*")
	type rule struct{ Record, Expr string }
	var rules []rule
	for _, e := range dashboardQueries(t) {
		if strings.HasPrefix(e, "label_values(") { // Grafana's, not PromQL
			continue
		}
		rules = append(rules, rule{"dashboard:query", vars.Replace(e)})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard.yml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s\n%s", err, out, b)
	}
}

// serveFlags returns the flags `followgraph serve --help` lists.
func serveFlags(tb testing.TB) map[string]bool {
	tb.Helper()
	out, err := exec.Command(binary, "serve", "--help").CombinedOutput()
	if err != nil {
		tb.Fatalf("serve --help: %v\n%s", err, out)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  (?:-\w, )?--([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["shutdown-timeout"] {
		tb.Fatalf("serve --help lists no --shutdown-timeout: the test reads it wrong\n%s", out)
	}
	return flags
}

// checkArgs reports each --flag of args that serve does not have, and
// returns the --shutdown-timeout args give (serve's default if none).
func checkArgs(t *testing.T, where string, flags map[string]bool, args []string) time.Duration {
	t.Helper()
	shutdown := 30 * time.Second
	for i, a := range args {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, value, hasValue := strings.Cut(name, "=")
		if !flags[name] {
			t.Errorf("%s: serve has no --%s", where, name)
		}
		if name == "shutdown-timeout" {
			if !hasValue && i+1 < len(args) {
				value = args[i+1]
			}
			d, err := time.ParseDuration(value)
			if err != nil {
				t.Errorf("%s: --shutdown-timeout %q: %v", where, value, err)
			}
			shutdown = d
		}
	}
	return shutdown
}

// envFlag is the flag a FOLLOWGRAPH_<NAME> variable sets (envDefaults).
func envFlag(name string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "FOLLOWGRAPH_"), "_", "-"))
}

// TestDeploy_FilesMatchFlags: the Containerfile's entrypoint, the compose
// file's nodes and the systemd unit name only flags and variables serve
// has, and give a stop more time than --shutdown-timeout, so that the
// drain is not cut short by a SIGKILL.
func TestDeploy_FilesMatchFlags(t *testing.T) {
	flags := serveFlags(t)

	t.Run("Containerfile", func(t *testing.T) {
		b, err := os.ReadFile(containerFile)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^ENTRYPOINT (\[.*\])$`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s has no ENTRYPOINT [...] line", containerFile)
		}
		var entry []string
		if err := json.Unmarshal(m[1], &entry); err != nil {
			t.Fatalf("%s: ENTRYPOINT: %v", containerFile, err)
		}
		if len(entry) < 2 || entry[1] != "serve" {
			t.Fatalf("%s: ENTRYPOINT %q, want /followgraph serve ...", containerFile, entry)
		}
		checkArgs(t, containerFile, flags, entry)
	})

	for file, want := range map[string]int{composeFile: 2, haComposeFile: 3} {
		t.Run(filepath.Base(file), func(t *testing.T) { checkCompose(t, file, want, flags) })
	}
	t.Run("SystemdUnit", func(t *testing.T) {
		b, err := os.ReadFile(unitFile)
		if err != nil {
			t.Fatal(err)
		}
		unit := string(b)
		exec := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindStringSubmatch(unit)
		stop := regexp.MustCompile(`(?m)^TimeoutStopSec=(.*)$`).FindStringSubmatch(unit)
		if exec == nil || stop == nil {
			t.Fatalf("%s: want an ExecStart= and a TimeoutStopSec= line", unitFile)
		}
		args := strings.Fields(exec[1])
		if len(args) < 2 || args[1] != "serve" {
			t.Fatalf("%s: ExecStart=%s, want followgraph serve ...", unitFile, exec[1])
		}
		shutdown := checkArgs(t, unitFile, flags, args)
		if d, err := time.ParseDuration(stop[1]); err != nil || d <= shutdown {
			t.Errorf("%s: TimeoutStopSec=%s, want a duration above --shutdown-timeout %s", unitFile, stop[1], shutdown)
		}
		for _, v := range regexp.MustCompile(`FOLLOWGRAPH_[A-Z_]+`).FindAllString(unit, -1) {
			if !flags[envFlag(v)] {
				t.Errorf("%s: %s sets no flag of serve", unitFile, v)
			}
		}
	})
}

// checkCompose checks a compose file's followgraph nodes (want of them)
// against serve's flags, as TestDeploy_FilesMatchFlags says.
func checkCompose(t *testing.T, file string, want int, flags map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image           string
			Command         []string
			Environment     map[string]string
			StopGracePeriod string `yaml:"stop_grace_period"`
			Healthcheck     struct{ Test []string }
		}
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	nodes := 0
	for name, s := range compose.Services {
		if !strings.Contains(s.Image, "followgraph") {
			continue
		}
		nodes++
		where := file + " " + name
		shutdown := checkArgs(t, where, flags, s.Command)
		for v := range s.Environment {
			if !strings.HasPrefix(v, "FOLLOWGRAPH_") || !flags[envFlag(v)] {
				t.Errorf("%s: %s sets no flag of serve", where, v)
			}
		}
		if grace, err := time.ParseDuration(s.StopGracePeriod); err != nil || grace <= shutdown {
			t.Errorf("%s: stop_grace_period %q, want a duration above --shutdown-timeout %s", where, s.StopGracePeriod, shutdown)
		}
		if hc := s.Healthcheck.Test; len(hc) < 4 || hc[1] != "/followgraph" || hc[2] != "probe" {
			t.Errorf("%s: healthcheck %q, want CMD /followgraph probe URL", where, hc)
		}
	}
	if nodes != want {
		t.Errorf("%s: %d followgraph nodes, want %d", file, nodes, want)
	}
}

// TestProbe: `followgraph probe` succeeds on a 2xx answer, and fails
// naming the status, or the error when nothing answers.
func TestProbe(t *testing.T) {
	s := start(t, t.TempDir())
	for _, tc := range []struct {
		name, url, fails string // fails: "" when it should succeed
	}{
		{"Ready", s.url + "/readyz", ""},
		{"NotFound", s.url + "/nope", "404 Not Found"},
		{"NothingListens", "http://" + freeAddr(t) + "/readyz", "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(binary, "probe", tc.url).CombinedOutput()
			if tc.fails == "" && err != nil {
				t.Fatalf("probe %s: %v\n%s", tc.url, err, out)
			}
			if tc.fails != "" && (err == nil || !strings.Contains(string(out), tc.fails)) {
				t.Fatalf("probe %s: %v %q, want a failure naming %q", tc.url, err, out, tc.fails)
			}
		})
	}
}

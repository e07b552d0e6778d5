package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

// browser returns the Chromium binary and the node_modules folder holding
// playwright-core that TestConsole_Browser drives it with, or skips the
// test (fails it in CI) saying how to install them. CHROMIUM and
// FOLLOWGRAPH_PLAYWRIGHT override where they are looked for.
func browser(t *testing.T) (chromium, modules string) {
	t.Helper()
	chromium, modules = os.Getenv("CHROMIUM"), os.Getenv("FOLLOWGRAPH_PLAYWRIGHT")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if modules == "" {
		modules = "/tmp/followgraph-ci-tools/node_modules" // where .ci/run installs it
	}
	how := "the console's browser test needs Debian's chromium (apt-get install chromium; or CHROMIUM=path), Node.js, " +
		"and npm's playwright-core (npm install --prefix /tmp/followgraph-ci-tools playwright-core; or FOLLOWGRAPH_PLAYWRIGHT=its node_modules folder); .ci/run installs them"
	if _, err := os.Stat(chromium); err != nil {
		testenv.Skip(t, how+": "+err.Error())
	}
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Skip(t, how+": "+err.Error())
	}
	if _, err := os.Stat(filepath.Join(modules, "playwright-core", "package.json")); err != nil {
		testenv.Skip(t, how+": "+err.Error())
	}
	return chromium, modules
}

// artifacts is the folder whose files CI keeps: FOLLOWGRAPH_ARTIFACTS, or
// artifacts/ at the top of the repository.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FOLLOWGRAPH_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// consoleRequest is one answer the console's page got, as the browser
// saw it (status 0: the request failed).
type consoleRequest struct {
	Method, URL string
	Status      int
}

// TestConsole_Browser: the console in headless Chromium against the real
// server with authentication on. Without the token the page says the
// metrics need scope admin; with it, its charts open with the server's
// history (the requests made before the page opened), a user's counts,
// first pages and relations show as the API answers them, with each time
// on one line, the page's address names the user looked up, an address
// naming a user opens it and a listed id opens its user, the requests
// chart does not count the page's own polling, the backlog chart rises
// under a write load, and every request the page made is one the server
// serves. The screenshot is saved as console.png in artifacts(t).
func TestConsole_Browser(t *testing.T) {
	chromium, modules := browser(t)
	const token = "console-admin-token-0123456789"
	tokens := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, tokens, token+" admin operator\n")
	// A slow persister, so that the writes below make a backlog that lasts
	// several of the page's polls.
	// Slow jobs, so that the job of a user hidden below lasts while the
	// page looks.
	s := launch(t, t.TempDir(), launchOptions{token: token, args: []string{"--auth-tokens", tokens, "--persist-rate", "200", "--jobs-rate", "10"}})
	ctx := context.Background()
	const user = 1
	for i := range 30 {
		follow(t, s, user, fg.UserID(2+i))
	}
	for i := range 5 {
		follow(t, s, fg.UserID(2+i), user)
	}
	const hidden = fg.UserID(500) // 300 followers at 10 edges a second: a job of 30 s
	for i := range 300 {
		follow(t, s, fg.UserID(600+i), hidden)
	}
	if _, err := s.client.SetState(ctx, hidden, fg.StateSuspended); err != nil {
		t.Fatal(err)
	}
	relationIDs := []fg.UserID{2, 7, 40} // as RELATION_IDS below: mutual, following, none
	account, settingsServed := settingsAnswer(t, s, token)
	waitHistory(t, s, token, 4)

	screenshot := filepath.Join(artifacts(t), "console.png")
	cmd := exec.Command("node", filepath.Join("testdata", "console.cjs"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "CHROMIUM="+chromium, "CONSOLE_URL="+s.url, "TOKEN="+token,
		"USER="+strconv.Itoa(user), "RELATION_IDS=2,7,40", "LINKED=2",
		"SCREENSHOT="+screenshot)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 16<<20)
	next := func(event string, out any) {
		t.Helper()
		if !lines.Scan() {
			cmd.Wait()
			t.Fatalf("the browser script ended before %q:\n%s", event, stderr.String())
		}
		var head struct{ Event, Error string }
		if err := json.Unmarshal(lines.Bytes(), &head); err != nil || head.Event != event {
			t.Fatalf("the browser script said %s (%v), want %q:\n%s", lines.Bytes(), err, event, stderr.String())
		}
		if err := json.Unmarshal(lines.Bytes(), out); err != nil {
			t.Fatal(err)
		}
	}

	var shown struct {
		Refused, Token       string
		Fields               map[string]string
		Following, Followers []string
		Relations            [][2]string
		Jobs                 [][]string
		Opened               struct{ Samples, Max float64 }
		Address              string
		TimeLines            []int
		IdleRequests         string
		Linked               string
		Clicked              struct{ ID, Address string }
	}
	next("shown", &shown)
	// The load runs while the page watches: writes as fast as 8 clients
	// go, bounded in count, against a persister of 200 rows a second.
	stop := make(chan struct{})
	var load sync.WaitGroup
	for w := range 8 {
		load.Go(func() {
			for i := range 500 {
				select {
				case <-stop:
					return
				default:
				}
				s.client.Follow(ctx, fg.UserID(1000+w), fg.UserID(10000+i))
			}
		})
	}
	var done struct {
		Backlog  []string
		Points   string
		Errors   []string
		Requests []consoleRequest
	}
	next("done", &done)
	close(stop)
	load.Wait()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the browser script: %v\n%s", err, stderr.String())
	}
	t.Logf("screenshot: %s", screenshot)

	if !strings.Contains(shown.Refused, "scope admin") {
		t.Errorf("without a token the page said %q, want that the metrics need scope admin", shown.Refused)
	}
	if shown.Token != token {
		t.Errorf("sessionStorage holds %q, want the token entered", shown.Token)
	}
	checkShownUser(t, s, user, relationIDs, account, shown.Fields, shown.Following, shown.Followers, shown.Relations)
	if shown.Opened.Samples < 2 || shown.Opened.Max <= 0 {
		t.Errorf("at its first draw the requests chart had %v samples, highest %v: want the server's history, with the requests made before the page opened",
			shown.Opened.Samples, shown.Opened.Max)
	}
	if shown.Address != "?user=1&relations=2,7,40" {
		t.Errorf("after the look-up the page's address is %q, want ?user=1&relations=2,7,40", shown.Address)
	}
	if len(shown.TimeLines) == 0 || slices.ContainsFunc(shown.TimeLines, func(n int) bool { return n != 1 }) {
		t.Errorf("the times shown take %v lines each, want 1", shown.TimeLines)
	}
	if shown.IdleRequests != "0 /s" {
		t.Errorf("with no client sending requests, the requests chart shows %q, want 0 /s: the page's own polling counted", shown.IdleRequests)
	}
	if shown.Linked != "2" || shown.Clicked.ID != "1" || shown.Clicked.Address != "?user=1" {
		t.Errorf("/console/?user=2 showed user %q; clicking the id %q in its following showed it with the address %q: want 2, then 1 at ?user=1",
			shown.Linked, shown.Clicked.ID, shown.Clicked.Address)
	}
	if !slices.ContainsFunc(shown.Jobs, func(row []string) bool {
		return len(row) == 3 && row[0] == "account states" && row[1] == "1 running" && strings.Contains(row[2], "edges left")
	}) {
		t.Errorf("the jobs table showed %q while a user's job ran, want a row of account states, 1 running, with its edges left", shown.Jobs)
	}
	if !backlogMoved(done.Backlog) {
		t.Errorf("the backlog chart did not rise under the write load: it showed %q (points %q)", done.Backlog, done.Points)
	}
	if len(done.Errors) > 0 {
		t.Errorf("the page threw: %q", done.Errors)
	}
	checkConsoleRequests(t, s, done.Requests, settingsServed)
}

// waitHistory waits until the server's history of its metrics, which
// the console draws when it opens, holds n samples.
func waitHistory(t *testing.T, s *server, token string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		req, _ := http.NewRequest(http.MethodGet, s.url+"/console/history", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		var h struct{ Times []int64 }
		if resp, err := http.DefaultClient.Do(req); err == nil {
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
		}
		if len(h.Times) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's history holds %d samples after 30 s, want %d", len(h.Times), n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func follow(t *testing.T, s *server, user, target fg.UserID) {
	t.Helper()
	if _, err := s.client.Follow(context.Background(), user, target); err != nil {
		t.Fatalf("follow %d→%d: %v", user, target, err)
	}
}

// settingsAnswer is how the server answers GET /v1/users/{user}/settings
// (docs/API.md has it; a build before it answers the route 404
// not_found): what the page must show for the account, and whether the
// route is served.
func settingsAnswer(t *testing.T, s *server, token string) (account string, served bool) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/users/1/settings", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Private bool
		Error   struct{ Code string }
	}
	json.NewDecoder(resp.Body).Decode(&body)
	switch {
	case resp.StatusCode == http.StatusOK && body.Private:
		return "private", true
	case resp.StatusCode == http.StatusOK:
		return "public", true
	case resp.StatusCode == http.StatusNotFound && body.Error.Code == fg.ENotFound:
		t.Logf("this build does not serve GET /v1/users/{user}/settings: the page must say so")
		return "not served", false
	default: // the page shows the error as the API says it
		return fmt.Sprintf("%d %s", resp.StatusCode, body.Error.Code), true
	}
}

// checkShownUser compares what the page shows of user with what the API
// answers; account is what it must show of the settings.
func checkShownUser(t *testing.T, s *server, user fg.UserID, others []fg.UserID, account string,
	fields map[string]string, following, followers []string, relations [][2]string) {
	t.Helper()
	ctx := context.Background()
	counts, err := s.client.Counts(ctx, []fg.UserID{user})
	if err != nil {
		t.Fatal(err)
	}
	if fields["following"] != strconv.FormatInt(counts[0].FollowingCount, 10) || fields["followers"] != strconv.FormatInt(counts[0].FollowerCount, 10) ||
		fields["state"] != "active" {
		t.Errorf("the page shows %v, want the counts %+v of an active user", fields, counts[0])
	}
	if !strings.Contains(fields["account"], account) {
		t.Errorf("the page shows the account as %q, want %q as the settings' answer says", fields["account"], account)
	}
	for _, l := range []struct {
		name  string
		shown []string
		read  func(context.Context, fg.UserID, fg.PageRequest) (fg.Page, error)
	}{{"following", following, s.client.Following}, {"followers", followers, s.client.Followers}} {
		page, err := l.read(ctx, user, fg.PageRequest{Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, e := range page.Entries {
			want = append(want, e.ID.String())
		}
		if strings.Join(l.shown, ",") != strings.Join(want, ",") {
			t.Errorf("the page shows %s %v, want the first page %v", l.name, l.shown, want)
		}
	}
	infos, err := s.client.Relations(ctx, user, others)
	if err != nil {
		t.Fatal(err)
	}
	var want [][2]string
	for _, r := range infos {
		want = append(want, [2]string{r.ID.String(), string(r.Relation)})
	}
	if fmt.Sprint(relations) != fmt.Sprint(want) {
		t.Errorf("the page shows relations %v, want %v", relations, want)
	}
}

// backlogMoved reports whether the backlog chart's values, as the page
// showed them one after another ("1234 events", "1.2k events"), changed,
// to a value above 0.
func backlogMoved(shown []string) bool {
	return len(shown) >= 2 && slices.ContainsFunc(shown, func(v string) bool {
		n, err := strconv.ParseFloat(strings.TrimRight(strings.TrimSuffix(v, " events"), "kM"), 64)
		return err == nil && n > 0
	})
}

// checkConsoleRequests checks that the page asked only its own origin,
// for its files or for routes the server serves: no 404 and no 405 (the
// settings' 404 only where this build does not serve them), nothing that
// failed, no write.
func checkConsoleRequests(t *testing.T, s *server, requests []consoleRequest, settingsServed bool) {
	t.Helper()
	asked := map[string]bool{}
	for _, r := range requests {
		u, err := url.Parse(r.URL)
		if err != nil || u.Scheme+"://"+u.Host != s.url {
			t.Errorf("the page asked another origin: %s %s", r.Method, r.URL)
			continue
		}
		parts := strings.Split(u.Path, "/")
		if len(parts) > 3 && parts[1] == "v1" && parts[2] == "users" {
			parts[3] = "{user}"
		}
		route := strings.Join(parts, "/")
		asked[route] = true
		settings := route == "/v1/users/{user}/settings"
		switch {
		case r.Method != http.MethodGet:
			t.Errorf("the console sent %s %s: it only reads", r.Method, r.URL)
		case r.Status == 0:
			t.Errorf("GET %s failed in the browser", r.URL)
		case r.Status == http.StatusNotFound && settings && !settingsServed:
		case r.Status == http.StatusNotFound || r.Status == http.StatusMethodNotAllowed:
			t.Errorf("GET %s: %d, a route the server does not serve", r.URL, r.Status)
		case strings.HasPrefix(route, "/console/") && r.Status != http.StatusOK:
			t.Errorf("GET %s: %d, want the console's file", r.URL, r.Status)
		}
	}
	for _, route := range []string{"/console/", "/console/console.js", "/console/console.css", "/console/history", "/metrics", "/readyz",
		"/v1/users/{user}", "/v1/users/{user}/settings", "/v1/users/{user}/following", "/v1/users/{user}/followers", "/v1/users/{user}/relations"} {
		if !asked[route] {
			t.Errorf("the page never asked %s; it asked %v", route, asked)
		}
	}
}

// TestConsole_OperatorPort: with --admin-addr the console and the API's
// reads it needs are on the operator port, writes there are refused, and
// the API port serves no console.
func TestConsole_OperatorPort(t *testing.T) {
	admin := freeAddr(t)
	s := launch(t, t.TempDir(), launchOptions{args: []string{"--admin-addr", admin}})
	follow(t, s, 1, 2)
	for _, tc := range []struct {
		method, url string
		want        int
	}{
		{"GET", "http://" + admin + "/console/", 200},
		{"GET", "http://" + admin + "/console/console.js", 200},
		{"GET", "http://" + admin + "/v1/users/1/following", 200},
		{"PUT", "http://" + admin + "/v1/users/1/following/3", 405},
		{"DELETE", "http://" + admin + "/v1/users/1/following/2", 405},
		{"GET", s.url + "/console/", 404},
	} {
		req, _ := http.NewRequest(tc.method, tc.url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.url, resp.StatusCode, tc.want)
		}
	}
	if c, err := s.client.Counts(context.Background(), []fg.UserID{1}); err != nil || c[0].FollowingCount != 1 {
		t.Fatalf("after the refused writes: %+v, %v; want user 1 following 1", c, err)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/followgraph/followgraph/internal/testenv"
)

// The recipes of the README and of docs/DEPLOY.md, run as written, so that
// the docs cannot drift from the product. A recipe is the ```sh block
// that follows an HTML comment <!-- recipe: NAME --> in the markdown
// (invisible to a reader). A test takes it from the file and runs it with
// bash, in a folder of its own holding ./followgraph (the binary
// TestMain built) as the recipe's "folder of the binary", with free ports
// in the variables the recipe reads (each has a default a reader may
// override the same way), and TMPDIR a folder of the test's, so that
// whatever the recipe's mktemp makes is the test's to check and remove.

// repoRoot is the top of the tree, from this package's folder.
const repoRoot = "../.."

// docRecipe returns the sh block after <!-- recipe: name --> in the
// markdown file at path (from the top of the tree).
func docRecipe(tb testing.TB, path, name string) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		tb.Fatal(err)
	}
	marker := "<!-- recipe: " + name + " -->"
	lines := strings.Split(string(data), "\n")
	at := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == marker {
			if at >= 0 {
				tb.Fatalf("%s has %s twice", path, marker)
			}
			at = i
		}
	}
	if at < 0 {
		tb.Fatalf("%s has no %s", path, marker)
	}
	if at+1 >= len(lines) || strings.TrimSpace(lines[at+1]) != "```sh" {
		tb.Fatalf("%s: %s is not followed by a ```sh block", path, marker)
	}
	var b strings.Builder
	for _, l := range lines[at+2:] {
		if strings.TrimSpace(l) == "```" {
			return b.String()
		}
		b.WriteString(l + "\n")
	}
	tb.Fatalf("%s: the block after %s does not end", path, marker)
	return ""
}

// recipePrelude comes before every recipe. bash stops at the first
// command that fails, naming it. curl is a function that runs curl with
// the recipe's arguments, silent but for errors, prints the answer's body
// as curl would, and keeps each answer in a folder of FGTEST_ANSWERS
// numbered in order (args, code, body), for the test to check.
const recipePrelude = `set -eEuo pipefail
trap 'echo "recipe: exit status $? from: $BASH_COMMAND" >&2' ERR
curl() {
	local n d
	n=$(cat "$FGTEST_ANSWERS/count" 2>/dev/null || echo 0)
	n=$((n + 1))
	echo "$n" >"$FGTEST_ANSWERS/count"
	d=$(printf '%s/%04d' "$FGTEST_ANSWERS" "$n")
	mkdir "$d"
	printf '%s\n' "$@" >"$d/args"
	command curl -sS -o "$d/body" -w '%{http_code}' "$@" >"$d/code"
	cat "$d/body"
}
`

// recipeRun is a recipe running in bash, in its own process group.
type recipeRun struct {
	cmd     *exec.Cmd
	out     *syncBuffer // its stdout and stderr: those of what it runs in the foreground
	answers string      // the folder of its curl answers
	done    chan struct{}
}

// recipeAnswer is one answer to a curl of a recipe.
type recipeAnswer struct {
	args []string // curl's arguments as the recipe gave them
	code int      // the HTTP status
	body string
	at   time.Time // when it was answered
}

func (a recipeAnswer) String() string { return "curl " + strings.Join(a.args, " ") }

// startRecipe runs script after recipePrelude with bash in dir, env added
// to the test's environment. The test's end kills whatever of it is left.
func startRecipe(tb testing.TB, dir string, env []string, script string) *recipeRun {
	tb.Helper()
	r := &recipeRun{out: &syncBuffer{}, answers: tb.TempDir(), done: make(chan struct{})}
	r.cmd = exec.Command("bash", "-c", recipePrelude+script)
	r.cmd.Dir = dir
	r.cmd.Env = append(append(os.Environ(), env...), "FGTEST_ANSWERS="+r.answers)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	tb.Cleanup(func() {
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
	})
	return r
}

// wait waits for the recipe to end within d, and fails tb, with its
// output, unless it ended with status 0.
func (r *recipeRun) wait(tb testing.TB, d time.Duration) {
	tb.Helper()
	select {
	case <-r.done:
	case <-time.After(d):
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
		tb.Fatalf("the recipe did not end within %s:\n%s", d, r.out)
	}
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		tb.Fatalf("the recipe ended with status %d:\n%s", code, r.out)
	}
}

// waitReady waits until the serve of the recipe answers base's /readyz
// with 200, within a minute, failing tb if the recipe ends first.
func (r *recipeRun) waitReady(tb testing.TB, base string) {
	tb.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(time.Minute); ; {
		if resp, err := hc.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-r.done:
			tb.Fatalf("the recipe ended (status %d) before %s was ready:\n%s", r.cmd.ProcessState.ExitCode(), base, r.out)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s not ready after a minute:\n%s", base, r.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// interrupt does what Ctrl-C does in the recipe's terminal: it sends
// SIGINT to the serve the recipe runs in the foreground, and waits until
// it has exited (the recipe's set -e then fails it unless serve exited
// with 0).
func (r *recipeRun) interrupt(tb testing.TB) {
	tb.Helper()
	pids := descendants(r.cmd.Process.Pid, "followgraph")
	if len(pids) != 1 {
		tb.Fatalf("the recipe runs %d followgraph processes (%v), not one serve:\n%s", len(pids), pids, r.out)
	}
	if err := syscall.Kill(pids[0], syscall.SIGINT); err != nil {
		tb.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); slices.Contains(descendants(r.cmd.Process.Pid, "followgraph"), pids[0]); {
		if time.Now().After(deadline) {
			tb.Fatalf("serve did not stop within a minute of SIGINT:\n%s", r.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recorded returns the recipe's curl answers so far, in order.
func (r *recipeRun) recorded(tb testing.TB) []recipeAnswer {
	tb.Helper()
	entries, err := os.ReadDir(r.answers)
	if err != nil {
		tb.Fatal(err)
	}
	var as []recipeAnswer
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(r.answers, e.Name())
		args, err1 := os.ReadFile(filepath.Join(d, "args"))
		code, err2 := os.ReadFile(filepath.Join(d, "code"))
		body, err3 := os.ReadFile(filepath.Join(d, "body"))
		info, err4 := os.Stat(filepath.Join(d, "code"))
		if err := firstErr(err1, err2, err3, err4); err != nil {
			tb.Fatalf("answer %s: %v", e.Name(), err)
		}
		n, err := strconv.Atoi(string(code))
		if err != nil {
			tb.Fatalf("answer %s: status %q", e.Name(), code)
		}
		as = append(as, recipeAnswer{args: strings.Split(strings.TrimSuffix(string(args), "\n"), "\n"),
			code: n, body: string(body), at: info.ModTime()})
	}
	return as
}

// firstErr returns the first error of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// descendants returns the processes below pid (its children, theirs, and
// so on) whose command name is comm.
func descendants(pid int, comm string) []int {
	entries, _ := os.ReadDir("/proc")
	parent, name := map[int]int{}, map[int]string{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		open, closing := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(string(stat[closing+1:]))
		if len(fields) < 2 || fields[0] == "Z" {
			continue // a zombie has exited
		}
		pp, _ := strconv.Atoi(fields[1])
		parent[p], name[p] = pp, string(stat[open+1:closing])
	}
	var found []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				if name[p] == comm {
					found = append(found, p)
				}
				break
			}
		}
	}
	slices.Sort(found)
	return found
}

// recipeDir returns a folder for a recipe to run in, holding ./followgraph.
func recipeDir(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.Symlink(binary, filepath.Join(dir, "followgraph")); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// needCommands skips tb (fails it in CI) unless every command is on the
// PATH.
func needCommands(tb testing.TB, commands ...string) {
	tb.Helper()
	var missing []string
	for _, c := range commands {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		testenv.Skip(tb, "the recipes need "+strings.Join(missing, ", ")+" on the PATH (apt-get install bash curl redis-server redis-tools nats-server postgresql-client)")
	}
}

// freePort returns a loopback port nothing listened on a moment ago.
func freePort(tb testing.TB) string {
	tb.Helper()
	_, port, _ := net.SplitHostPort(freeAddr(tb))
	return port
}

// listening returns the loopback ports of ports that something listens on.
func listening(ports ...string) []string {
	var open []string
	for _, p := range ports {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+p, time.Second); err == nil {
			c.Close()
			open = append(open, p)
		}
	}
	return open
}

// errorLines returns the log lines of level ERROR in logs.
func errorLines(logs string) []string {
	var lines []string
	for l := range strings.Lines(logs) {
		if strings.Contains(l, `"level":"ERROR"`) {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return lines
}

// curlCount returns how many curl commands script runs, one a line.
func curlCount(script string) int {
	n := 0
	for l := range strings.Lines(script) {
		if strings.HasPrefix(strings.TrimSpace(l), "curl ") {
			n++
		}
	}
	return n
}

// checkTour checks the answers of the README's tour: one per curl of
// tour, each a 2xx with a body, and no list in a JSON answer empty (each
// set question of the tour has an answer with the tour's own data).
func checkTour(tb testing.TB, tour string, as []recipeAnswer) {
	tb.Helper()
	if want := curlCount(tour); len(as) != want {
		tb.Fatalf("the tour has %d curl commands, %d answered: %v", want, len(as), as)
	}
	for _, a := range as {
		if a.code < 200 || a.code > 299 {
			tb.Errorf("%s: answered %d %s", a, a.code, a.body)
			continue
		}
		if strings.TrimSpace(a.body) == "" {
			tb.Errorf("%s: answered %d with nothing", a, a.code)
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(a.body), &obj) != nil {
			if !slices.Contains(a.args, "-I") {
				tb.Errorf("%s: answered %d with no JSON object: %s", a, a.code, a.body)
			}
			continue
		}
		for k, v := range obj {
			var list []json.RawMessage
			if strings.HasPrefix(string(v), "[") && json.Unmarshal(v, &list) == nil && len(list) == 0 {
				tb.Errorf("%s: %q is an empty list: %s", a, k, a.body)
			}
		}
	}
}

// postgresBase returns the URL of the PostgreSQL server of admin (a
// database's URL), without a database: the recipes' $postgres.
func postgresBase(tb testing.TB, admin string) string {
	tb.Helper()
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path, u.RawQuery = "", ""
	return u.String()
}

// recipeDatabase returns the name of a database for a recipe to create
// and drop, which the test's end drops if the recipe did not.
func recipeDatabase(tb testing.TB, admin string) string {
	tb.Helper()
	name := fmt.Sprintf("fgtest_recipe_%x", rand.Uint64())
	tb.Cleanup(func() {
		ctx := context.Background()
		if conn, err := pgx.Connect(ctx, admin); err == nil {
			conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			conn.Close(ctx)
		}
	})
	return name
}

// databaseExists reports whether the server of admin has a database name.
func databaseExists(tb testing.TB, admin, name string) bool {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("postgres %s: %v", admin, err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n > 0
}

// shutdownRedisAtEnd shuts down, at the test's end, any Redis a recipe
// left on ports (redis-server --daemonize leaves the recipe's process
// group).
func shutdownRedisAtEnd(tb testing.TB, ports ...string) {
	tb.Cleanup(func() {
		for _, p := range listening(ports...) {
			exec.Command("redis-cli", "-p", p, "shutdown", "nosave").Run()
		}
	})
}

// checkLeftNothing fails tb when the recipe left a server listening on
// one of ports, a file in tmp (its TMPDIR) or in dir (its folder) beyond
// keep, or the database db ("": none).
func checkLeftNothing(tb testing.TB, ports []string, tmp, dir string, keep []string, admin, db string) {
	tb.Helper()
	if open := listening(ports...); len(open) > 0 {
		tb.Errorf("after its clean-up, something still listens on the recipe's ports %v", open)
	}
	for _, d := range []string{tmp, dir} {
		entries, err := os.ReadDir(d)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range entries {
			if d != dir || !slices.Contains(keep, e.Name()) {
				tb.Errorf("after its clean-up, the recipe left %s", filepath.Join(d, e.Name()))
			}
		}
	}
	if db != "" && databaseExists(tb, admin, db) {
		tb.Errorf("after its clean-up, the database %s is still there", db)
	}
}

// get returns the status and body of a GET of u.
func get(tb testing.TB, u string) (int, string) {
	tb.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(u)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestRecipe_Tour runs the README's Getting started command (the binary
// for `go run ./cmd/followgraph`), on a free port given as
// FOLLOWGRAPH_ADDR, and the README's tour against it, as written: every
// answer is a 2xx and no list in it is empty; the start logs no ERROR
// line, and Ctrl-C stops serve with status 0. It also checks that the
// README's test command is the one CI runs.
func TestRecipe_Tour(t *testing.T) {
	needCommands(t, "bash", "curl")
	started := docRecipe(t, "README.md", "getting-started")
	var commands []string
	for l := range strings.Lines(started) {
		if c, _, _ := strings.Cut(l, "#"); strings.TrimSpace(c) != "" {
			commands = append(commands, strings.TrimSpace(c))
		}
	}
	if len(commands) != 2 || !strings.HasPrefix(commands[0], "go run ./cmd/followgraph serve") || !strings.HasPrefix(commands[1], "go test ") {
		t.Fatalf("Getting started is not the two commands, serve then the tests:\n%s", started)
	}
	ci, err := os.ReadFile(filepath.Join(repoRoot, ".ci/run"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(ci), "\n"), commands[1]) {
		t.Errorf(".ci/run does not run the README's test command %q", commands[1])
	}

	dir := recipeDir(t)
	addr := freeAddr(t)
	env := []string{"FOLLOWGRAPH_ADDR=" + addr}
	serve := startRecipe(t, dir, env, strings.Replace(commands[0], "go run ./cmd/followgraph", "./followgraph", 1)+"\n")
	serve.waitReady(t, "http://"+addr)
	tour := docRecipe(t, "README.md", "tour")
	run := startRecipe(t, dir, env, tour)
	run.wait(t, time.Minute)
	checkTour(t, tour, run.recorded(t))
	serve.interrupt(t)
	serve.wait(t, 10*time.Second)
	logs := serve.out.String()
	if !strings.Contains(logs, `"msg":"followgraph ready"`) {
		t.Errorf("serve did not log followgraph ready:\n%s", logs)
	}
	if lines := errorLines(logs); len(lines) > 0 {
		t.Errorf("a start on one machine logged %d ERROR lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// TestRecipe_Production runs the README's production recipe as written,
// on free ports and a database of its own: Redis and NATS on loopback
// with their files in a temporary folder, serve on them and PostgreSQL,
// with the tour against it. Then, in the same shell, the Redis Cluster
// recipe, whose serve rebuilds the graph from the database, and both
// clean-ups, which leave no server, file or database behind. Neither
// serve logs an ERROR line.
func TestRecipe_Production(t *testing.T) {
	admin := testenv.Server(t, testenv.Postgres, testenv.PostgresHint)
	needCommands(t, "bash", "curl", "redis-server", "redis-cli", "nats-server", "createdb", "dropdb")
	db := recipeDatabase(t, admin)
	redisPort, natsPort := freePort(t), freePort(t)
	var clusterPorts []string
	for range 6 {
		clusterPorts = append(clusterPorts, clusterPort(t)) // its bus port, +10000, free too
	}
	ports := append([]string{redisPort, natsPort}, clusterPorts...)
	shutdownRedisAtEnd(t, ports...)
	dir, tmp, addr := recipeDir(t), t.TempDir(), freeAddr(t)
	env := []string{"redis_port=" + redisPort, "nats_port=" + natsPort, "FOLLOWGRAPH_ADDR=" + addr,
		"postgres=" + postgresBase(t, admin), "db=" + db, "cluster_ports=" + strings.Join(clusterPorts, " "), "TMPDIR=" + tmp}
	script := docRecipe(t, "README.md", "production") + docRecipe(t, "README.md", "redis-cluster") +
		docRecipe(t, "README.md", "redis-cluster-stop") + docRecipe(t, "README.md", "production-stop")
	begin := time.Now()
	run := startRecipe(t, dir, env, script)
	run.waitReady(t, "http://"+addr)
	t.Logf("RECIPE | production | ready in %.1f s", time.Since(begin).Seconds())
	tour := docRecipe(t, "README.md", "tour")
	tourRun := startRecipe(t, dir, env, tour)
	tourRun.wait(t, time.Minute)
	checkTour(t, tour, tourRun.recorded(t))
	code, counts := get(t, "http://"+addr+"/v1/users/2")
	if code != http.StatusOK {
		t.Fatalf("GET /v1/users/2: %d %s", code, counts)
	}
	run.interrupt(t)

	begin = time.Now()
	run.waitReady(t, "http://"+addr)
	t.Logf("RECIPE | redis-cluster | ready in %.1f s", time.Since(begin).Seconds())
	if code, again := get(t, "http://"+addr+"/v1/users/2"); code != http.StatusOK || again != counts {
		t.Errorf("on the Redis Cluster, GET /v1/users/2 answered %d %s, on Redis %s", code, again, counts)
	}
	run.interrupt(t)
	run.wait(t, time.Minute)

	logs := run.out.String()
	if n := strings.Count(logs, `"msg":"followgraph ready"`); n != 2 {
		t.Errorf("%d followgraph ready lines, want 2 (Redis, then the Cluster):\n%s", n, logs)
	}
	if !strings.Contains(logs, `"msg":"rebuilding the graph in Redis`) {
		t.Errorf("the serve on the new Redis Cluster did not say it rebuilt the graph:\n%s", logs)
	}
	if lines := errorLines(logs); len(lines) > 0 {
		t.Errorf("the production recipe's serves logged %d ERROR lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	checkLeftNothing(t, ports, tmp, dir, []string{"followgraph"}, admin, db)
}

// TestRecipe_HA runs docs/DEPLOY.md's highly available topology on
// binaries as written, on free ports and a database of its own: three
// serve nodes running the event log among them, a Redis master and its
// replica, PostgreSQL. A write reads back through every node; with a node
// killed, the other two take a write, and the node started again rejoins
// and reads it; the clean-up leaves no server, file or database behind.
func TestRecipe_HA(t *testing.T) {
	admin := testenv.Server(t, testenv.Postgres, testenv.PostgresHint)
	needCommands(t, "bash", "curl", "redis-server", "redis-cli", "createdb", "dropdb")
	db := recipeDatabase(t, admin)
	var api, route []string
	for range 3 {
		api, route = append(api, freePort(t)), append(route, freePort(t))
	}
	redisPort, replicaPort := freePort(t), freePort(t)
	ports := append(append([]string{redisPort, replicaPort}, api...), route...)
	shutdownRedisAtEnd(t, redisPort, replicaPort)
	dir, tmp, logs := recipeDir(t), t.TempDir(), t.TempDir()
	env := []string{"api_ports=" + strings.Join(api, " "), "route_ports=" + strings.Join(route, " "),
		"redis_port=" + redisPort, "replica_port=" + replicaPort, "postgres=" + postgresBase(t, admin), "db=" + db,
		"TMPDIR=" + tmp, "FGTEST_LOGS=" + logs}
	check, kill := docRecipe(t, "docs/DEPLOY.md", "ha-check"), docRecipe(t, "docs/DEPLOY.md", "ha-kill")
	script := docRecipe(t, "docs/DEPLOY.md", "ha") + check + kill +
		// The test's own line: the nodes' logs and the routes' password, kept
		// from the clean-up.
		`cp "$ha"/node*.log "$ha/route-password" "$FGTEST_LOGS"/` + "\n" +
		docRecipe(t, "docs/DEPLOY.md", "ha-stop")
	t.Cleanup(func() { // a failed run leaves the nodes' logs in $ha: show them
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(tmp, "*", "node*.log"))
		for _, name := range logs {
			b, _ := os.ReadFile(name)
			t.Logf("%s:\n%s", name, b)
		}
	})
	begin := time.Now()
	run := startRecipe(t, dir, env, script)
	run.wait(t, 3*time.Minute)
	t.Logf("RECIPE | ha | ran in %.1f s", time.Since(begin).Seconds())

	as := run.recorded(t)
	// ha-check's write, then its loop's read through each node; ha-kill's two.
	if want := curlCount(check) + len(api) + curlCount(kill); len(as) != want {
		t.Fatalf("%d answers, want %d: %v\n%s", len(as), want, as, run.out)
	}
	for i, a := range as {
		if a.code != http.StatusOK {
			t.Errorf("%s: answered %d %s", a, a.code, a.body)
			continue
		}
		var edge struct{ Following bool }
		if err := json.Unmarshal([]byte(a.body), &edge); err != nil || !edge.Following {
			t.Errorf("answer %d, %s: %s, want following true", i+1, a, a.body)
		}
	}
	for i, node := range api {
		if !slices.ContainsFunc(as[1:4], func(a recipeAnswer) bool { return strings.Contains(a.args[0], ":"+node+"/") }) {
			t.Errorf("node %d (:%s) was not read back: %v", i, node, as[1:4])
		}
	}
	t.Logf("RECIPE | ha | a killed node started again answered %.1f s after the others took a write without it", as[5].at.Sub(as[4].at).Seconds())

	password, err := os.ReadFile(filepath.Join(logs, "route-password"))
	if err != nil || len(password) < 16 {
		t.Fatalf("the routes' password: %q, %v", password, err)
	}
	for i := range 3 {
		data, err := os.ReadFile(filepath.Join(logs, fmt.Sprintf("node%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		log := string(data)
		want := 1 // node 0 twice: it was started again
		if i == 0 {
			want = 2
		}
		if n := strings.Count(log, `"msg":"followgraph ready"`); n != want {
			t.Errorf("node %d logged followgraph ready %d times, want %d:\n%s", i, n, want, log)
		}
		if strings.Contains(log, string(password)) {
			t.Errorf("node %d logged the routes' password", i)
		}
		for _, l := range errorLines(log) { // a normal start, a kill and a restart log none
			t.Errorf("node %d logged an ERROR line: %s", i, l)
		}
	}
	checkLeftNothing(t, ports, tmp, dir, []string{"followgraph"}, admin, db)
}

// TestRecipe_Regions runs docs/DEPLOY.md's two regions as written: a
// follow written in each region is read back in the other, and both count
// the two followers alike.
func TestRecipe_Regions(t *testing.T) {
	needCommands(t, "bash", "curl")
	apiA, apiB, leaf := freePort(t), freePort(t), freePort(t)
	dir, tmp, logs := recipeDir(t), t.TempDir(), t.TempDir()
	env := []string{"api_a=" + apiA, "api_b=" + apiB, "leaf_port=" + leaf, "TMPDIR=" + tmp, "FGTEST_LOGS=" + logs}
	script := docRecipe(t, "docs/DEPLOY.md", "regions") + docRecipe(t, "docs/DEPLOY.md", "regions-check") +
		`cp "$regions"/*.log "$FGTEST_LOGS"/` + "\n" + // the test's own line: the logs, kept from the clean-up
		docRecipe(t, "docs/DEPLOY.md", "regions-stop")
	begin := time.Now()
	run := startRecipe(t, dir, env, script)
	run.wait(t, 2*time.Minute)
	t.Logf("RECIPE | regions | ran in %.1f s", time.Since(begin).Seconds())

	as := run.recorded(t)
	if len(as) < 6 {
		t.Fatalf("%d answers, want at least 6: %v\n%s", len(as), as, run.out)
	}
	for _, a := range append(as[:2:2], as[len(as)-2:]...) {
		if a.code != http.StatusOK {
			t.Errorf("%s: answered %d %s", a, a.code, a.body)
		}
	}
	for _, a := range as[len(as)-2:] {
		var c struct {
			FollowerCount int64 `json:"follower_count"`
		}
		if err := json.Unmarshal([]byte(a.body), &c); err != nil || c.FollowerCount != 2 {
			t.Errorf("%s: %s, want follower_count 2", a, a.body)
		}
	}
	for _, region := range []string{"a", "b"} {
		data, err := os.ReadFile(filepath.Join(logs, region+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"msg":"followgraph ready"`) {
			t.Errorf("region %s did not log followgraph ready:\n%s", region, data)
		}
		for _, l := range errorLines(string(data)) {
			t.Errorf("region %s logged an ERROR line: %s", region, l)
		}
	}
	checkLeftNothing(t, []string{apiA, apiB, leaf}, tmp, dir, []string{"followgraph"}, "", "")
}

// Package console is the operator console: a read-only page, served
// under /console/, that looks up a user and watches the pipeline's health
// and the running jobs. It is static files embedded in the binary (plain
// HTML, CSS and JavaScript, no build step); everything it shows, the
// browser asks of the routes the server already serves (the /v1 API,
// /metrics and /readyz), with the operator's token, which the server
// checks as it checks any client's, and the History of the metrics it
// charts, which the server samples while it runs (history.go), so that
// the page opens with the last minutes drawn.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// Prefix is the path the console is served under.
const Prefix = "/console/"

//go:embed static
var static embed.FS

// files serves the embedded files under Prefix, with headers that keep
// the page from loading anything but its own files and from being framed.
var files = func() http.Handler {
	root, err := fs.Sub(static, "static")
	if err != nil {
		panic("console: " + err.Error()) // static is embedded: cannot happen
	}
	fileServer := http.StripPrefix(Prefix, http.FileServerFS(root))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache") // a new binary's console is never an old one's
		fileServer.ServeHTTP(w, r)
	})
}()

// Mount returns a handler that serves the console under Prefix (and
// redirects the path without its last slash there) and passes every
// other request to next unchanged, HistoryPath included, which the
// server routes with the access of /metrics. Its only cost for those is one
// comparison of the path's start. The files need no token: they hold no
// data, and the requests they make carry the operator's.
func Mount(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == HistoryPath: // the server's, with its token checks
			next.ServeHTTP(w, r)
		case strings.HasPrefix(p, Prefix):
			files.ServeHTTP(w, r)
		case p == Prefix[:len(Prefix)-1]:
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// OnOperatorPort returns the handler of an operator port (serve's
// --admin-addr) with the console: the console under Prefix, the API's
// reads (GET and HEAD under /v1/) answered by api with its own token
// checks, since the page can only reach its own origin, and everything
// else by ops. Any other method under /v1/ is answered 405
// method_not_allowed: the operator port stays read-only, and writes go to
// the API's port.
func OnOperatorPort(ops, api http.Handler) http.Handler {
	return Mount(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !strings.HasPrefix(r.URL.Path, "/v1/"):
			ops.ServeHTTP(w, r)
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			api.ServeHTTP(w, r)
		default:
			h := w.Header()
			h.Set("Allow", "GET, HEAD")
			h.Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			w.Write([]byte(readOnly))
		}
	}))
}

// readOnly is the answer to a write on the operator port, in the API's
// error shape.
const readOnly = `{"error":{"code":"method_not_allowed","message":"the operator port serves only the API's reads (GET); send writes to the API's port"}}` + "\n"

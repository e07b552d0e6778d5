// Package secret keeps passwords and tokens out of what the binary
// writes. The URLs of the backends (Redis, NATS, PostgreSQL, MySQL) may
// carry them in their user info or in a query parameter; Redact gives a
// URL fit for a log line, and a Scrubber, built from the configured URLs,
// replaces every secret they hold wherever it shows up anyway (a driver's
// error that quotes its input, say): in log records, through Handler, and
// in errors, through Error. WithPassword puts a password read from a file
// into a URL, so that it need not stand on a command line.
package secret

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
)

// Mask is what stands for a secret in what is written.
const Mask = "xxxxx"

// secretParams are the query parameters that hold secrets, lowercased.
var secretParams = []string{"password", "pass", "passwd", "pwd", "sslpassword", "token", "auth_token", "secret", "client_secret", "sslkey_password"}

// split cuts a URL into its scheme, user info (without '@', "" when
// there is none), the rest of its authority and what follows (path, query,
// fragment). It does not need the authority to be valid: a Cluster's
// "h1:p1,h2:p2" and typos alike.
func split(s string) (scheme, userinfo, hosts, tail string, ok bool) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "", "", "", s, false
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		return scheme, authority[:at], authority[at+1:], tail, true
	}
	return scheme, "", authority, tail, true
}

// tokenInUser reports whether the user info of a URL of scheme is a token
// when it has no password (nats://TOKEN@host).
func tokenInUser(scheme string) bool {
	return scheme == "nats" || scheme == "tls" || scheme == "ws" || scheme == "wss"
}

// list cuts s, a URL or a comma-separated list of URLs
// ("nats://h1:4222,nats://h2:4222"), into its URLs: at each comma that a
// scheme:// follows. A comma between hosts ("redis+cluster://h1:1,h2:2")
// stays in its URL.
func list(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' && hasScheme(s[i+1:]) {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// hasScheme reports whether s begins with a URL's scheme://.
func hasScheme(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok || scheme == "" {
		return false
	}
	for i, c := range scheme {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// Redact returns s with every secret it holds masked: the password of its
// user info (the whole user info of a NATS URL without a password, a
// token), and the values of query parameters such as password and token;
// in each URL of a comma-separated list of them. Something that is not a
// URL is returned as it is.
func Redact(s string) string {
	urls := list(s)
	for i, u := range urls {
		urls[i] = redact(u)
	}
	return strings.Join(urls, ",")
}

func redact(s string) string {
	scheme, userinfo, hosts, tail, ok := split(s)
	if !ok {
		return s
	}
	if userinfo != "" {
		if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
			userinfo = user + ":" + Mask
		} else if tokenInUser(scheme) {
			userinfo = Mask
		}
		hosts = userinfo + "@" + hosts
	}
	return scheme + "://" + hosts + redactQuery(tail)
}

// redactQuery masks the values of the secret parameters in the query of
// tail (a URL's path, query and fragment).
func redactQuery(tail string) string {
	path, query, ok := strings.Cut(tail, "?")
	if !ok {
		return tail
	}
	query, frag, hasFrag := strings.Cut(query, "#")
	params := strings.Split(query, "&")
	for i, p := range params {
		name, _, hasValue := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil && hasValue && slices.Contains(secretParams, strings.ToLower(n)) {
			params[i] = name + "=" + Mask
		}
	}
	out := path + "?" + strings.Join(params, "&")
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// Values returns the secrets s (a URL, or a comma-separated list of them)
// holds, as written and unescaped, for a Scrubber.
func Values(s string) []string {
	var out []string
	for _, u := range list(s) {
		out = append(out, values(u)...)
	}
	return out
}

func values(s string) []string {
	scheme, userinfo, _, tail, ok := split(s)
	if !ok {
		return nil
	}
	var out []string
	add := func(v string) {
		out = append(out, v)
		if u, err := url.PathUnescape(v); err == nil {
			out = append(out, u)
		}
		if u, err := url.QueryUnescape(v); err == nil {
			out = append(out, u)
		}
	}
	if user, pass, hasPass := strings.Cut(userinfo, ":"); hasPass {
		add(pass)
	} else if userinfo != "" && tokenInUser(scheme) {
		add(user)
	}
	if _, query, ok := strings.Cut(tail, "?"); ok {
		query, _, _ = strings.Cut(query, "#")
		for p := range strings.SplitSeq(query, "&") {
			name, value, _ := strings.Cut(p, "=")
			if n, err := url.QueryUnescape(name); err == nil && slices.Contains(secretParams, strings.ToLower(n)) {
				add(value)
			}
		}
	}
	return out
}

// WithPassword returns s with its user info's password set to password:
// the user it names keeps it (a URL without user info gets an empty user,
// as redis://:password@host), but a NATS URL without a user takes password
// as its token (nats://TOKEN@host). In a comma-separated list of URLs,
// each URL gets it.
func WithPassword(s, password string) (string, error) {
	urls := list(s)
	for i, u := range urls {
		var err error
		if urls[i], err = withPassword(u, password); err != nil {
			return "", err
		}
	}
	return strings.Join(urls, ","), nil
}

func withPassword(s, password string) (string, error) {
	scheme, userinfo, hosts, tail, ok := split(s)
	if !ok {
		return "", errors.New("not a URL: it has no scheme://")
	}
	user, _, _ := strings.Cut(userinfo, ":")
	if user == "" && tokenInUser(scheme) {
		return scheme + "://" + url.PathEscape(password) + "@" + hosts + tail, nil
	}
	return scheme + "://" + user + ":" + url.PathEscape(password) + "@" + hosts + tail, nil
}

// Scrubber replaces known secrets in text. Its zero value knows none; it is
// safe for concurrent use once built.
type Scrubber struct {
	r *strings.Replacer
}

// NewScrubber returns a scrubber of secrets (empty strings and strings of
// fewer than 3 bytes are ignored: they would mask ordinary text).
func NewScrubber(secrets ...string) *Scrubber {
	var pairs []string
	seen := map[string]bool{}
	// Longer first, so that a secret that contains another is masked whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		if len(s) < 3 || seen[s] {
			continue
		}
		seen[s] = true
		pairs = append(pairs, s, Mask)
	}
	if len(pairs) == 0 {
		return &Scrubber{}
	}
	return &Scrubber{r: strings.NewReplacer(pairs...)}
}

// String returns s with every secret masked.
func (sc *Scrubber) String(s string) string {
	if sc == nil || sc.r == nil {
		return s
	}
	return sc.r.Replace(s)
}

// Error returns err with a message from which every secret is masked; the
// chain stays for errors.Is and errors.As. Nil stays nil.
func (sc *Scrubber) Error(err error) error {
	if err == nil || sc == nil || sc.r == nil {
		return err
	}
	return &scrubbed{err: err, msg: sc.String(err.Error())}
}

type scrubbed struct {
	err error
	msg string
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// Handler returns h with every secret masked from each record's message
// and attributes.
func (sc *Scrubber) Handler(h slog.Handler) slog.Handler {
	if sc == nil || sc.r == nil {
		return h
	}
	return &handler{h: h, sc: sc}
}

type handler struct {
	h  slog.Handler
	sc *Scrubber
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.sc.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return &handler{h: h.h.WithAttrs(clean), sc: h.sc}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{h: h.h.WithGroup(name), sc: h.sc}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.sc.String(v.String()))
	case slog.KindGroup:
		as := v.Group()
		clean := make([]slog.Attr, len(as))
		for i, g := range as {
			clean[i] = h.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(clean...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.sc.String(x.Error()))
		case []byte:
			return slog.String(a.Key, h.sc.String(string(x)))
		case fmt.Stringer:
			return slog.String(a.Key, h.sc.String(x.String()))
		default:
			return slog.Attr{Key: a.Key, Value: v}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

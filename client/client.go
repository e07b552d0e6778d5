// Package client is a Go client of the followgraph HTTP API (docs/API.md):
// a followgraph.Graph that a service can import without the server's
// dependencies. It needs the standard library and the domain package only.
//
//	c := client.New("http://127.0.0.1:8080")
//	res, err := c.Follow(ctx, 1, 2)
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/followgraph/followgraph"
)

// Client is a followgraph.Graph served by a followgraph server over HTTP.
// It checks nothing itself: the server validates every call, and its
// errors come back as *followgraph.Error with the server's code and
// message. A server that cannot be reached, or answers with a gateway
// error, gives code unavailable, with the cause wrapped. The client makes
// no retries of its own.
//
// An unavailable error on a read means no answer was given. On a write
// (Follow, Unfollow, Block, Mute, Approve, SetPrivate, …) its outcome is unknown: the write may still take
// effect, as the server may have made it before a backend failed, or the
// connection may have dropped after the server made it. Writes are
// idempotent: retry them until they are answered. (Where the server knew
// before changing anything that it could not make the write durable, it
// changed nothing, and the message says so.)
//
// A Client is safe for concurrent use.
type Client struct {
	base  string
	hc    *http.Client
	token string // "Bearer <token>", or "" for none
}

var _ followgraph.Graph = (*Client)(nil)

// maxResponseBytes bounds the answers the client reads. The largest the
// server sends, 10000 relations, is about 1.5 MB.
const maxResponseBytes = 64 << 20

// maxQueryIDs is the most ids GET /v1/users/{user}/relations takes in its
// query (docs/API.md); Relations asks for more with POST.
const maxQueryIDs = 1000

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests with hc, which sets
// the transport and the timeout of each call (the context of a call
// bounds it too). The default, or when hc is nil, is http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// WithToken makes the client send token as its bearer token with every
// request: a service token, or a user's token (a JWT), for a server with
// authentication (docs/API.md, "Authentication"). A token that is not
// valid makes calls fail with code unauthenticated, a token that may not
// do a call with code forbidden.
func WithToken(token string) Option {
	return func(c *Client) {
		if token != "" {
			c.token = "Bearer " + token
		}
	}
}

// WithTLS makes the client speak HTTPS with cfg (its roots, a client
// certificate for mutual TLS), over a transport of its own; use it with an
// https:// baseURL. It replaces WithHTTPClient's transport.
func WithTLS(cfg *tls.Config) Option {
	return func(c *Client) {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg
		hc := *c.hc
		hc.Transport = t
		c.hc = &hc
	}
}

// New returns a client of the server at baseURL, such as
// "http://127.0.0.1:8080". A baseURL that is not a URL makes every call
// fail.
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Follow makes user follow target, or asks to when target is private; see
// followgraph.Graph. Besides the errors of the Graph, it returns code
// rate_limited when the server limits the writes of user (as every write
// of the Client does).
func (c *Client) Follow(ctx context.Context, user, target followgraph.UserID) (followgraph.FollowResult, error) {
	var out followJSON
	if err := c.do(ctx, http.MethodPut, userPath(user, "following", target.String()), "", nil, &out); err != nil {
		return followgraph.FollowResult{}, err
	}
	since, err := parseTime(out.Since)
	if err != nil {
		return followgraph.FollowResult{}, malformed(http.MethodPut, "follow", err)
	}
	if out.Following == out.Requested {
		return followgraph.FollowResult{}, malformed(http.MethodPut, "follow", nil)
	}
	return followgraph.FollowResult{Created: out.Created, Since: since, Requested: out.Requested}, nil
}

// Unfollow makes user stop following target, or withdraws user's follow
// request to target; see followgraph.Graph and Follow.
func (c *Client) Unfollow(ctx context.Context, user, target followgraph.UserID) (bool, error) {
	var out unfollowJSON
	if err := c.do(ctx, http.MethodDelete, userPath(user, "following", target.String()), "", nil, &out); err != nil {
		return false, err
	}
	return out.Removed, nil
}

// IsFollowing reports whether user follows target; see followgraph.Graph.
func (c *Client) IsFollowing(ctx context.Context, user, target followgraph.UserID) (followgraph.Edge, error) {
	var out edgeJSON
	if err := c.do(ctx, http.MethodGet, userPath(user, "following", target.String()), "", nil, &out); err != nil {
		return followgraph.Edge{}, err
	}
	since, err := parseNullTime(out.Since)
	if err != nil || out.Following == since.IsZero() {
		return followgraph.Edge{}, malformed(http.MethodGet, "is following", err)
	}
	return followgraph.Edge{Following: out.Following, Since: since}, nil
}

// Counts returns the counters of each id; see followgraph.Graph. One id
// is asked for with GET /v1/users/{user}, others with GET /v1/users?ids=.
func (c *Client) Counts(ctx context.Context, ids []followgraph.UserID) ([]followgraph.Counts, error) {
	var list []countsJSON
	if len(ids) == 1 {
		var out countsJSON
		if err := c.do(ctx, http.MethodGet, userPath(ids[0]), "", nil, &out); err != nil {
			return nil, err
		}
		list = []countsJSON{out}
	} else {
		var out countsListJSON
		if err := c.do(ctx, http.MethodGet, "/v1/users", idsQuery(ids), nil, &out); err != nil {
			return nil, err
		}
		list = out.Users
	}
	if len(list) != len(ids) {
		return nil, malformed(http.MethodGet, "counts", fmt.Errorf("%d counts for %d ids", len(list), len(ids)))
	}
	cs := make([]followgraph.Counts, len(list))
	for i, x := range list {
		id, err := followgraph.ParseUserID(x.ID)
		if err != nil {
			return nil, malformed(http.MethodGet, "counts", err)
		}
		st := followgraph.StateActive
		if x.State != "" {
			var ok bool
			if st, ok = followgraph.ParseState(x.State); !ok || st.Active() {
				return nil, malformed(http.MethodGet, "counts", fmt.Errorf("state %q", x.State))
			}
		}
		cs[i] = followgraph.Counts{ID: id, FollowingCount: x.FollowingCount, FollowerCount: x.FollowerCount, FollowRequests: x.FollowRequests, State: st}
	}
	return cs, nil
}

// Following returns a page of the users that user follows; see
// followgraph.Graph. ListFollowing does the same with a viewer.
func (c *Client) Following(ctx context.Context, user followgraph.UserID, req followgraph.PageRequest) (followgraph.Page, error) {
	p, err := c.ListFollowing(ctx, user, ListRequest{Limit: req.Limit, Cursor: req.Cursor})
	if err != nil {
		return followgraph.Page{}, err
	}
	return p.page(), nil
}

// Followers returns a page of the users that follow user; see
// followgraph.Graph. ListFollowers does the same with a viewer.
func (c *Client) Followers(ctx context.Context, user followgraph.UserID, req followgraph.PageRequest) (followgraph.Page, error) {
	p, err := c.ListFollowers(ctx, user, ListRequest{Limit: req.Limit, Cursor: req.Cursor})
	if err != nil {
		return followgraph.Page{}, err
	}
	return p.page(), nil
}

// ListRequest asks for one page of a following or followers list. Limit
// and Cursor are those of followgraph.PageRequest. Viewer, when not 0,
// asks for the viewer's relation to each user listed, so that a list can
// be shown to someone with a follow button per user in one call.
type ListRequest struct {
	Limit  int
	Cursor string
	Viewer followgraph.UserID
}

// ListPage is one page of a following or followers list, newest first.
// Next is "" on the last page.
type ListPage struct {
	Entries []ListEntry
	Next    string
}

// ListEntry is one user of a list, with the time of the follow that put it
// there. Relation is the viewer's relation to that user (RelationSelf for
// the viewer itself), and the flags are the viewer's blocks, mutes and
// requests with that user, as Relations reports them; Relation is "" and
// the flags false when the request named no viewer.
type ListEntry struct {
	ID       followgraph.UserID
	Since    time.Time
	Relation followgraph.Relation

	Blocking    bool // the viewer blocks ID
	BlockedBy   bool // ID blocks the viewer
	Muting      bool // the viewer mutes ID
	Requested   bool // the viewer has a pending follow request to ID
	RequestedBy bool // ID has a pending follow request to the viewer
}

// ListFollowing returns a page of the users that user follows, with the
// relation of req.Viewer to each; see Following for the rest. An invalid
// viewer is code invalid_id.
func (c *Client) ListFollowing(ctx context.Context, user followgraph.UserID, req ListRequest) (ListPage, error) {
	return c.list(ctx, userPath(user, "following"), req)
}

// ListFollowers returns a page of the users that follow user, with the
// relation of req.Viewer to each; see Followers for the rest. An invalid
// viewer is code invalid_id.
func (c *Client) ListFollowers(ctx context.Context, user followgraph.UserID, req ListRequest) (ListPage, error) {
	return c.list(ctx, userPath(user, "followers"), req)
}

func (c *Client) list(ctx context.Context, path string, req ListRequest) (ListPage, error) {
	q := pageQuery(followgraph.PageRequest{Limit: req.Limit, Cursor: req.Cursor})
	if req.Viewer != 0 {
		q.Set("viewer", req.Viewer.String())
	}
	var out listJSON
	if err := c.do(ctx, http.MethodGet, path, q.Encode(), nil, &out); err != nil {
		return ListPage{}, err
	}
	entries := make([]ListEntry, len(out.Users))
	for i, x := range out.Users {
		id, err1 := followgraph.ParseUserID(x.ID)
		since, err2 := parseTime(x.Since)
		if err := errors.Join(err1, err2); err != nil {
			return ListPage{}, malformed(http.MethodGet, path, err)
		}
		if req.Viewer != 0 && x.Relation == "" {
			return ListPage{}, malformed(http.MethodGet, path, fmt.Errorf("no relation for user %s", x.ID))
		}
		f := x.flagsJSON
		entries[i] = ListEntry{ID: id, Since: since, Relation: followgraph.Relation(x.Relation),
			Blocking: f.Blocking, BlockedBy: f.BlockedBy, Muting: f.Muting, Requested: f.Requested, RequestedBy: f.RequestedBy}
	}
	return ListPage{Entries: entries, Next: deref(out.NextCursor)}, nil
}

// page returns p without the relations.
func (p ListPage) page() followgraph.Page {
	entries := make([]followgraph.Entry, len(p.Entries))
	for i, e := range p.Entries {
		entries[i] = followgraph.Entry{ID: e.ID, Since: e.Since}
	}
	return followgraph.Page{Entries: entries, Next: p.Next}
}

// Relations returns the relation of viewer to each id; see
// followgraph.Graph. Up to 1000 ids are asked for with GET, more with POST.
func (c *Client) Relations(ctx context.Context, viewer followgraph.UserID, ids []followgraph.UserID) ([]followgraph.RelationInfo, error) {
	var out relationsJSON
	var err error
	if len(ids) > maxQueryIDs {
		err = c.do(ctx, http.MethodPost, userPath(viewer, "relations"), "", relationsRequest{IDs: idStrings(ids)}, &out)
	} else {
		err = c.do(ctx, http.MethodGet, userPath(viewer, "relations"), idsQuery(ids), nil, &out)
	}
	if err != nil {
		return nil, err
	}
	if len(out.Relations) != len(ids) {
		return nil, malformed(http.MethodGet, "relations", fmt.Errorf("%d relations for %d ids", len(out.Relations), len(ids)))
	}
	rels := make([]followgraph.RelationInfo, len(out.Relations))
	for i, x := range out.Relations {
		id, err := followgraph.ParseUserID(x.ID)
		if err != nil {
			return nil, malformed(http.MethodGet, "relations", err)
		}
		following, err1 := parseNullTime(x.FollowingSince)
		followedBy, err2 := parseNullTime(x.FollowedBySince)
		if err := errors.Join(err1, err2); err != nil {
			return nil, malformed(http.MethodGet, "relations", err)
		}
		rels[i] = followgraph.RelationInfo{ID: id, Relation: followgraph.Relation(x.Relation), FollowingSince: following, FollowedBySince: followedBy}
		x.flagsJSON.set(&rels[i])
	}
	return rels, nil
}

// Mutuals returns the users that user follows and that follow user; see
// followgraph.Graph.
func (c *Client) Mutuals(ctx context.Context, user followgraph.UserID, req followgraph.PageRequest) (followgraph.SetPage, error) {
	return c.set(ctx, userPath(user, "mutuals"), req)
}

// CommonFollowing returns the users that both user and other follow; see
// followgraph.Graph.
func (c *Client) CommonFollowing(ctx context.Context, user, other followgraph.UserID, req followgraph.PageRequest) (followgraph.SetPage, error) {
	return c.set(ctx, userPath(user, "common-following", other.String()), req)
}

// CommonFollowers returns the users that follow both user and other; see
// followgraph.Graph.
func (c *Client) CommonFollowers(ctx context.Context, user, other followgraph.UserID, req followgraph.PageRequest) (followgraph.SetPage, error) {
	return c.set(ctx, userPath(user, "common-followers", other.String()), req)
}

// KnownFollowers returns the users that user follows and that follow
// target; see followgraph.Graph.
func (c *Client) KnownFollowers(ctx context.Context, user, target followgraph.UserID, req followgraph.PageRequest) (followgraph.SetPage, error) {
	return c.set(ctx, userPath(user, "known-followers", target.String()), req)
}

func (c *Client) set(ctx context.Context, path string, req followgraph.PageRequest) (followgraph.SetPage, error) {
	var out setJSON
	if err := c.do(ctx, http.MethodGet, path, pageQuery(req).Encode(), nil, &out); err != nil {
		return followgraph.SetPage{}, err
	}
	entries, err := entriesOf(len(out.Users), func(i int) (string, string) { return out.Users[i].ID, out.Users[i].Since })
	if err != nil {
		return followgraph.SetPage{}, malformed(http.MethodGet, path, err)
	}
	return followgraph.SetPage{Count: out.Count, Entries: entries, Next: deref(out.NextCursor)}, nil
}

// Suggestions returns people user may want to follow; see
// followgraph.Graph.
func (c *Client) Suggestions(ctx context.Context, user followgraph.UserID, limit int) ([]followgraph.Suggestion, error) {
	var q string
	if limit != 0 {
		q = "limit=" + strconv.Itoa(limit)
	}
	var out suggestionsJSON
	if err := c.do(ctx, http.MethodGet, userPath(user, "suggestions"), q, nil, &out); err != nil {
		return nil, err
	}
	ss := make([]followgraph.Suggestion, len(out.Users))
	for i, x := range out.Users {
		id, err := followgraph.ParseUserID(x.ID)
		if err != nil {
			return nil, malformed(http.MethodGet, "suggestions", err)
		}
		via := make([]followgraph.UserID, len(x.Via))
		for j, v := range x.Via {
			if via[j], err = followgraph.ParseUserID(v); err != nil {
				return nil, malformed(http.MethodGet, "suggestions", err)
			}
		}
		ss[i] = followgraph.Suggestion{ID: id, Score: x.Score, Via: via}
	}
	return ss, nil
}

// do sends a request and decodes a 200 answer into out. Any other answer
// becomes an error: the *followgraph.Error of its body, or one made from
// its status when it has none.
func (c *Client) do(ctx context.Context, method, path, rawQuery string, body, out any) error {
	target := c.base + path
	if rawQuery != "" {
		target += "?" + rawQuery
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("client: %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return unreachable(method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return unreachable(method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("client: %s %s: %w", method, path, errorOf(resp.StatusCode, data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return malformed(method, path, err)
	}
	return nil
}

// errorOf returns the error of an answer with a status other than 200.
func errorOf(status int, body []byte) *followgraph.Error {
	var e errorJSON
	if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		return &followgraph.Error{Code: e.Error.Code, Message: e.Error.Message}
	}
	// Not an answer of a followgraph server: a proxy's, perhaps.
	code := followgraph.EInternal
	switch status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		code = followgraph.EUnavailable
	case http.StatusTooManyRequests:
		code = followgraph.ERateLimited
	case http.StatusRequestEntityTooLarge:
		code = followgraph.ETooLarge
	}
	return followgraph.Errorf(code, "the server answered %d %s", status, http.StatusText(status))
}

// unreachable returns the error of a request that got no answer: code
// unavailable, wrapping the cause.
func unreachable(method, path string, err error) error {
	return fmt.Errorf("client: %s %s: %w: %w", method, path,
		followgraph.Errorf(followgraph.EUnavailable, "the followgraph server did not answer"), err)
}

// malformed returns the error of an answer that is not what docs/API.md says:
// an internal error.
func malformed(method, what string, err error) error {
	if err == nil {
		err = errors.New("inconsistent fields")
	}
	return fmt.Errorf("client: %s %s: malformed answer: %w", method, what, err)
}

// userPath returns /v1/users/{user}, followed by the given segments.
func userPath(user followgraph.UserID, segments ...string) string {
	return "/v1/users/" + user.String() + strings.Join(append([]string{""}, segments...), "/")
}

func idsQuery(ids []followgraph.UserID) string {
	if len(ids) == 0 {
		return ""
	}
	return "ids=" + strings.Join(idStrings(ids), ",")
}

func pageQuery(req followgraph.PageRequest) url.Values {
	q := url.Values{}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.Cursor != "" {
		q.Set("cursor", req.Cursor)
	}
	return q
}

func entriesOf(n int, entry func(i int) (id, since string)) ([]followgraph.Entry, error) {
	entries := make([]followgraph.Entry, n)
	for i := range entries {
		id, since := entry(i)
		var err error
		if entries[i].ID, err = followgraph.ParseUserID(id); err != nil {
			return nil, err
		}
		if entries[i].Since, err = parseTime(since); err != nil {
			return nil, err
		}
	}
	return entries, nil
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UTC(), err
}

func parseNullTime(s *string) (time.Time, error) {
	if s == nil {
		return time.Time{}, nil
	}
	return parseTime(*s)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

package httpapi

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/followgraph/followgraph"
)

// The server writes its answers with these appenders, straight from the
// domain values into one buffer: encoding/json and the JSON types that
// package client decodes cost a fifth of a read's CPU. The
// conformance suite over HTTP decodes every answer with the client and
// checks it against api/openapi.yaml, so the two cannot drift apart.

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendID(b []byte, id followgraph.UserID) []byte {
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, '"')
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, followgraph.TimeFormat)
	return append(b, '"')
}

// appendNullTime appends null for the zero time, which means "never".
func appendNullTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	return appendTime(b, t)
}

// appendCursor appends null for the cursor of the last page.
func appendCursor(b []byte, c string) []byte {
	if c == "" {
		return append(b, "null"...)
	}
	return appendString(b, c)
}

func appendBool(b []byte, v bool) []byte { return strconv.AppendBool(b, v) }

// appendFollow appends the answer of a follow, or of a follow request
// when res.Requested.
func appendFollow(b []byte, user, target followgraph.UserID, res followgraph.FollowResult) []byte {
	b = appendID(append(b, `{"user":`...), user)
	b = appendID(append(b, `,"target":`...), target)
	if res.Requested {
		b = append(b, `,"following":false,"requested":true`...)
	} else {
		b = append(b, `,"following":true`...)
	}
	b = appendBool(append(b, `,"created":`...), res.Created)
	b = appendTime(append(b, `,"since":`...), res.Since)
	return append(b, '}')
}

// appendApprove appends the answer of an approval of follower's request.
func appendApprove(b []byte, user, follower followgraph.UserID, res followgraph.FollowResult) []byte {
	b = appendID(append(b, `{"user":`...), user)
	b = appendID(append(b, `,"follower":`...), follower)
	b = appendBool(append(b, `,"following":true,"created":`...), res.Created)
	b = appendTime(append(b, `,"since":`...), res.Since)
	return append(b, '}')
}

func appendRemoveFollower(b []byte, user, follower followgraph.UserID, removed bool) []byte {
	b = appendID(append(b, `{"user":`...), user)
	b = appendID(append(b, `,"follower":`...), follower)
	b = appendBool(append(b, `,"removed":`...), removed)
	return append(b, '}')
}

// linkFields are the JSON names of what the answers about an edge of a
// kind other than follow say: whether it is on ("blocking", "muting",
// "requested"), the user at its other end ("target", or "requester" for a
// request, which its path names from the side of its target), and whether
// it has an expiry (a mute's "expires_at").
type linkFields struct {
	on, other string
	expires   bool
}

var (
	blockFields   = linkFields{on: `,"blocking":`, other: `,"target":`}
	muteFields    = linkFields{on: `,"muting":`, other: `,"target":`, expires: true}
	requestFields = linkFields{on: `,"requested":`, other: `,"requester":`}
)

// appendLinkMade appends the answer of a block or a mute; a mute's has
// its expiry, null for none.
func appendLinkMade(b []byte, f linkFields, user, target followgraph.UserID, res followgraph.LinkResult) []byte {
	b = appendID(append(b, `{"user":`...), user)
	b = appendID(append(b, f.other...), target)
	b = appendBool(append(b, f.on...), true)
	b = appendBool(append(b, `,"created":`...), res.Created)
	b = appendTime(append(b, `,"since":`...), res.Since)
	if f.expires {
		b = appendNullTime(append(b, `,"expires_at":`...), res.Expires)
	}
	return append(b, '}')
}

// appendLinkRemoved appends the answer of an unblock or an unmute.
func appendLinkRemoved(b []byte, f linkFields, user, target followgraph.UserID, removed bool) []byte {
	b = appendID(append(b, `{"user":`...), user)
	b = appendID(append(b, f.other...), target)
	b = appendBool(append(b, f.on...), false)
	b = appendBool(append(b, `,"removed":`...), removed)
	return append(b, '}')
}

// appendLink appends the state of one edge: since null when it is off,
// and a mute's expiry.
func appendLink(b []byte, f linkFields, user, other followgraph.UserID, l followgraph.Link) []byte {
	b = appendID(append(b, `{"user":`...), user)
	b = appendID(append(b, f.other...), other)
	b = appendBool(append(b, f.on...), l.On)
	b = appendNullTime(append(b, `,"since":`...), l.Since)
	if f.expires {
		b = appendNullTime(append(b, `,"expires_at":`...), l.Expires)
	}
	return append(b, '}')
}

func appendSettings(b []byte, st followgraph.Settings) []byte {
	b = appendID(append(b, `{"id":`...), st.ID)
	b = appendBool(append(b, `,"private":`...), st.Private)
	return append(b, '}')
}

// appendAccountState appends a user's account state: since null for a
// user never set, pending the edges its job has left.
func appendAccountState(b []byte, a followgraph.AccountState) []byte {
	b = appendID(append(b, `{"id":`...), a.ID)
	b = appendString(append(b, `,"state":`...), a.State.String())
	b = appendNullTime(append(b, `,"since":`...), a.Since)
	b = strconv.AppendInt(append(b, `,"pending":`...), a.Pending, 10)
	return append(b, '}')
}

func appendUnfollow(b []byte, user, target followgraph.UserID, removed bool) []byte {
	b = appendID(append(b, `{"user":`...), user)
	b = appendID(append(b, `,"target":`...), target)
	b = appendBool(append(b, `,"following":false,"removed":`...), removed)
	return append(b, '}')
}

func appendEdge(b []byte, user, target followgraph.UserID, e followgraph.Edge) []byte {
	b = appendID(append(b, `{"user":`...), user)
	b = appendID(append(b, `,"target":`...), target)
	b = appendBool(append(b, `,"following":`...), e.Following)
	b = appendNullTime(append(b, `,"since":`...), e.Since)
	return append(b, '}')
}

func appendCounts(b []byte, c followgraph.Counts) []byte {
	b = appendID(append(b, `{"id":`...), c.ID)
	b = strconv.AppendInt(append(b, `,"following_count":`...), c.FollowingCount, 10)
	b = strconv.AppendInt(append(b, `,"follower_count":`...), c.FollowerCount, 10)
	b = strconv.AppendInt(append(b, `,"follow_requests_count":`...), c.FollowRequests, 10)
	if !c.State.Active() {
		b = appendString(append(b, `,"state":`...), c.State.String())
	}
	return append(b, '}')
}

func appendCountsList(b []byte, cs []followgraph.Counts) []byte {
	b = append(b, `{"users":[`...)
	for i, c := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCounts(b, c)
	}
	return append(b, "]}"...)
}

// appendEntries appends a list's users, each with the viewer's relation
// when rels is not nil.
func appendEntries(b []byte, es []followgraph.Entry, rels []followgraph.RelationInfo) []byte {
	b = append(b, '[')
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendID(append(b, `{"id":`...), e.ID)
		b = appendTime(append(b, `,"since":`...), e.Since)
		if rels != nil {
			b = appendString(append(b, `,"relation":`...), string(rels[i].Relation))
			b = appendFlags(b, rels[i])
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendList(b []byte, p followgraph.Page, rels []followgraph.RelationInfo) []byte {
	b = appendEntries(append(b, `{"users":`...), p.Entries, rels)
	b = appendCursor(append(b, `,"next_cursor":`...), p.Next)
	return append(b, '}')
}

func appendSet(b []byte, p followgraph.SetPage) []byte {
	b = strconv.AppendInt(append(b, `{"count":`...), p.Count, 10)
	b = appendEntries(append(b, `,"users":`...), p.Entries, nil)
	b = appendCursor(append(b, `,"next_cursor":`...), p.Next)
	return append(b, '}')
}

func appendRelations(b []byte, rels []followgraph.RelationInfo) []byte {
	b = append(b, `{"relations":[`...)
	for i, r := range rels {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendID(append(b, `{"id":`...), r.ID)
		b = appendString(append(b, `,"relation":`...), string(r.Relation))
		b = appendNullTime(append(b, `,"following_since":`...), r.FollowingSince)
		b = appendNullTime(append(b, `,"followed_by_since":`...), r.FollowedBySince)
		b = appendFlags(b, r)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendFlags appends the flags of blocks, mutes and requests of r that
// are true; docs/API.md has each only when it is.
func appendFlags(b []byte, r followgraph.RelationInfo) []byte {
	if r.Blocking {
		b = append(b, `,"blocking":true`...)
	}
	if r.BlockedBy {
		b = append(b, `,"blocked_by":true`...)
	}
	if r.Muting {
		b = append(b, `,"muting":true`...)
	}
	if r.Requested {
		b = append(b, `,"requested":true`...)
	}
	if r.RequestedBy {
		b = append(b, `,"requested_by":true`...)
	}
	return b
}

func appendSuggestions(b []byte, ss []followgraph.Suggestion) []byte {
	b = append(b, `{"users":[`...)
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendID(append(b, `{"id":`...), s.ID)
		b = strconv.AppendInt(append(b, `,"score":`...), s.Score, 10)
		b = append(b, `,"via":[`...)
		for j, v := range s.Via {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendID(b, v)
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...)
}

func appendStatus(b []byte, status string) []byte {
	return append(appendString(append(b, `{"status":`...), status), '}')
}

// appendReady appends /readyz's answer, naming the degraded backends.
func appendReady(b []byte, degraded []string) []byte {
	b = append(b, `{"status":"ready"`...)
	if len(degraded) > 0 {
		b = append(b, `,"degraded":[`...)
		for i, name := range degraded {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, name)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendError(b []byte, code, message string) []byte {
	b = appendString(append(b, `{"error":{"code":`...), code)
	b = appendString(append(b, `,"message":`...), message)
	return append(b, "}}"...)
}

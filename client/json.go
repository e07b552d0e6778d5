package client

import (
	"github.com/followgraph/followgraph"
)

// The JSON bodies of docs/API.md, as the client decodes them (the server
// writes them with the appenders of httpapi's encode.go). Ids are decimal strings;
// times are followgraph.TimeFormat; a pointer is null where docs/API.md says
// null.

// followJSON is the answer of a follow, or of a follow request (Requested
// true, Following false).
type followJSON struct {
	User      string `json:"user"`
	Target    string `json:"target"`
	Following bool   `json:"following"`
	Requested bool   `json:"requested"`
	Created   bool   `json:"created"`
	Since     string `json:"since"`
}

// approveJSON is the answer of an approval.
type approveJSON struct {
	User      string `json:"user"`
	Follower  string `json:"follower"`
	Following bool   `json:"following"`
	Created   bool   `json:"created"`
	Since     string `json:"since"`
}

type removeFollowerJSON struct {
	User     string `json:"user"`
	Follower string `json:"follower"`
	Removed  bool   `json:"removed"`
}

// linkJSON is every answer about one block, mute or follow request: made
// (Created), removed (Removed) or read; Blocking, Muting or Requested
// says which kind and whether it is on, and ExpiresAt is a mute's.
type linkJSON struct {
	User      string  `json:"user"`
	Blocking  *bool   `json:"blocking"`
	Muting    *bool   `json:"muting"`
	Requested *bool   `json:"requested"`
	Created   bool    `json:"created"`
	Removed   bool    `json:"removed"`
	Since     *string `json:"since"`
	ExpiresAt *string `json:"expires_at"`
}

// muteSeconds and muteMillis are the bodies of PUT
// /v1/users/{user}/mutes/{target}, in the unit that d has whole.
type muteSeconds struct {
	DurationSeconds int64 `json:"duration_seconds"`
}

type muteMillis struct {
	DurationMS int64 `json:"duration_ms"`
}

// settingsJSON is the answer of GET and PUT /v1/users/{user}/settings.
type settingsJSON struct {
	ID      string `json:"id"`
	Private bool   `json:"private"`
}

// settingsRequest is the body of PUT /v1/users/{user}/settings.
type settingsRequest struct {
	Private bool `json:"private"`
}

type unfollowJSON struct {
	User      string `json:"user"`
	Target    string `json:"target"`
	Following bool   `json:"following"`
	Removed   bool   `json:"removed"`
}

type edgeJSON struct {
	User      string  `json:"user"`
	Target    string  `json:"target"`
	Following bool    `json:"following"`
	Since     *string `json:"since"`
}

type countsJSON struct {
	ID             string `json:"id"`
	FollowingCount int64  `json:"following_count"`
	FollowerCount  int64  `json:"follower_count"`
	FollowRequests int64  `json:"follow_requests_count"`
	State          string `json:"state"` // absent for an active user
}

type countsListJSON struct {
	Users []countsJSON `json:"users"`
}

// listedJSON is a user in a following or followers list. Relation and
// the flags are there only when the request names a viewer.
type listedJSON struct {
	ID       string `json:"id"`
	Since    string `json:"since"`
	Relation string `json:"relation,omitempty"`
	flagsJSON
}

// flagsJSON are the flags of blocks, mutes and requests of a relation,
// each there only when true.
type flagsJSON struct {
	Blocking    bool `json:"blocking"`
	BlockedBy   bool `json:"blocked_by"`
	Muting      bool `json:"muting"`
	Requested   bool `json:"requested"`
	RequestedBy bool `json:"requested_by"`
}

// set copies the flags into ri.
func (f flagsJSON) set(ri *followgraph.RelationInfo) {
	ri.Blocking, ri.BlockedBy, ri.Muting, ri.Requested, ri.RequestedBy = f.Blocking, f.BlockedBy, f.Muting, f.Requested, f.RequestedBy
}

type listJSON struct {
	Users      []listedJSON `json:"users"`
	NextCursor *string      `json:"next_cursor"`
}

type memberJSON struct {
	ID    string `json:"id"`
	Since string `json:"since"`
}

type setJSON struct {
	Count      int64        `json:"count"`
	Users      []memberJSON `json:"users"`
	NextCursor *string      `json:"next_cursor"`
}

type relationJSON struct {
	ID              string  `json:"id"`
	Relation        string  `json:"relation"`
	FollowingSince  *string `json:"following_since"`
	FollowedBySince *string `json:"followed_by_since"`
	flagsJSON
}

type relationsJSON struct {
	Relations []relationJSON `json:"relations"`
}

// relationsRequest is the body of POST /v1/users/{user}/relations.
type relationsRequest struct {
	IDs []string `json:"ids"`
}

type suggestionJSON struct {
	ID    string   `json:"id"`
	Score int64    `json:"score"`
	Via   []string `json:"via"`
}

type suggestionsJSON struct {
	Users []suggestionJSON `json:"users"`
}

type errorJSON struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// idStrings returns ids in decimal, and an empty slice (not nil, which
// is null in JSON) for none.
func idStrings(ids []followgraph.UserID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

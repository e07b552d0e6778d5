package client

import (
	"github.com/followgraph/followgraph"
)

// The JSON bodies of docs/API.md, as the client decodes them (the server
// writes them with the appenders of httpapi's encode.go). Ids are decimal strings;
// times are followgraph.TimeFormat; a pointer is null where docs/API.md says
// null.

type followJSON struct {
	User      string `json:"user"`
	Target    string `json:"target"`
	Following bool   `json:"following"`
	Created   bool   `json:"created"`
	Since     string `json:"since"`
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
}

type countsListJSON struct {
	Users []countsJSON `json:"users"`
}

// listedJSON is a user in a following or followers list. Relation is
// there only when the request names a viewer.
type listedJSON struct {
	ID       string `json:"id"`
	Since    string `json:"since"`
	Relation string `json:"relation,omitempty"`
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

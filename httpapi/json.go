package httpapi

import (
	"time"

	"github.com/followgraph/followgraph"
)

// The JSON bodies of API.md, shared by the server and the client. Ids are
// decimal strings; times are followgraph.TimeFormat; a pointer is null
// where API.md says null.

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

type statusJSON struct {
	Status string `json:"status"`
}

type errorJSON struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func formatTime(t time.Time) string { return t.UTC().Format(followgraph.TimeFormat) }

// nullTime returns nil for the zero time, which means "never" in the domain.
func nullTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := formatTime(t)
	return &s
}

// nullCursor returns nil for the cursor of the last page.
func nullCursor(c string) *string {
	if c == "" {
		return nil
	}
	return &c
}

func listJSONOf(p followgraph.Page, rels []followgraph.RelationInfo) listJSON {
	out := listJSON{Users: make([]listedJSON, len(p.Entries)), NextCursor: nullCursor(p.Next)}
	for i, e := range p.Entries {
		out.Users[i] = listedJSON{ID: e.ID.String(), Since: formatTime(e.Since)}
		if rels != nil {
			out.Users[i].Relation = string(rels[i].Relation)
		}
	}
	return out
}

func setJSONOf(p followgraph.SetPage) setJSON {
	out := setJSON{Count: p.Count, Users: make([]memberJSON, len(p.Entries)), NextCursor: nullCursor(p.Next)}
	for i, e := range p.Entries {
		out.Users[i] = memberJSON{ID: e.ID.String(), Since: formatTime(e.Since)}
	}
	return out
}

func relationsJSONOf(rels []followgraph.RelationInfo) relationsJSON {
	out := relationsJSON{Relations: make([]relationJSON, len(rels))}
	for i, r := range rels {
		out.Relations[i] = relationJSON{
			ID:              r.ID.String(),
			Relation:        string(r.Relation),
			FollowingSince:  nullTime(r.FollowingSince),
			FollowedBySince: nullTime(r.FollowedBySince),
		}
	}
	return out
}

func suggestionsJSONOf(ss []followgraph.Suggestion) suggestionsJSON {
	out := suggestionsJSON{Users: make([]suggestionJSON, len(ss))}
	for i, s := range ss {
		out.Users[i] = suggestionJSON{ID: s.ID.String(), Score: s.Score, Via: idStrings(s.Via)}
	}
	return out
}

func countsJSONOf(c followgraph.Counts) countsJSON {
	return countsJSON{ID: c.ID.String(), FollowingCount: c.FollowingCount, FollowerCount: c.FollowerCount}
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

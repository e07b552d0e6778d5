package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/memgraph"
)

// FuzzRelationsBody sends bodies to POST /v1/users/1/relations and checks
// the answer against a reference reading of the body, and against
// api/openapi.yaml: a body that is exactly {"ids": [strings]} with at most
// 10000 valid ids gets their relations, in order; any other gets 400,
// invalid_id when the only fault is an id that is not a string holding a
// valid id, else invalid_argument. Never a 500, never a panic.
func FuzzRelationsBody(f *testing.F) {
	for _, s := range []string{
		`{"ids": ["2", "3", "1", "2"]}`,
		`{"ids": []}`,
		`{"ids": ["9223372036854775807"]}`,
		` {"ids":["2"]} ` + "\n",
		`{"ids": ["\u0032"]}`,
		`{"ids": ["9223372036854775808"]}`,
		`{"ids": ["0"]}`, `{"ids": ["-1"]}`, `{"ids": ["007"]}`, `{"ids": ["abc"]}`, `{"ids": [" 2"]}`, `{"ids": [""]}`,
		`{"ids": [2]}`, `{"ids": ["2", 3]}`, `{"ids": [1e400]}`, `{"ids": [null]}`, `{"ids": [true]}`, `{"ids": [["2"]]}`, `{"ids": [{}]}`,
		``, `{`, `ids=2`, `null`, `[]`, `"ids"`, `{}`, `{"ids": null}`, `{"ids": "2"}`, `{"ids": {"0": "2"}}`,
		`{"ids": ["2"], "viewer": "1"}`, `{"IDS": ["2"]}`, `{"ids": ["2"], "ids": ["3"]}`,
		`{"ids": ["2"]}{"ids": ["3"]}`, `{"ids": ["2"]} x`, `{"ids": ["2"]`, `{"ids": ["2",]}`,
		"{\"ids\": [\"2\xff\"]}", "\xef\xbb\xbf{\"ids\": [\"2\"]}",
	} {
		f.Add([]byte(s))
	}
	g := memgraph.New()
	ctx := context.Background()
	for _, e := range [][2]followgraph.UserID{{1, 2}, {2, 1}, {1, 3}, {4, 1}} {
		if _, err := g.Follow(ctx, e[0], e[1]); err != nil {
			f.Fatal(err)
		}
	}
	srv := httpapi.NewServer(g)
	s := specOf(f)

	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/v1/users/1/relations", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		resp := w.Result()
		got := w.Body.Bytes()

		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q", ct)
		}
		if _, err := s.check(ctx, req, body, resp.StatusCode, resp.Header, got); err != nil {
			t.Fatal(err)
		}
		ids, code := readIDsBody(body)
		if code != "" {
			var e struct{ Error struct{ Code string } }
			if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(got, &e) != nil || e.Error.Code != code {
				t.Fatalf("body %q: %d %s, want 400 %s", body, resp.StatusCode, got, code)
			}
			return
		}
		var out struct{ Relations []struct{ ID string } }
		if resp.StatusCode != http.StatusOK || json.Unmarshal(got, &out) != nil {
			t.Fatalf("body %q: %d %s, want 200", body, resp.StatusCode, got)
		}
		var gotIDs []string
		for _, r := range out.Relations {
			gotIDs = append(gotIDs, r.ID)
		}
		var wantIDs []string
		for _, id := range ids {
			wantIDs = append(wantIDs, id.String())
		}
		if !slices.Equal(gotIDs, wantIDs) {
			t.Fatalf("body %q: relations of %v, want of %v", body, gotIDs, wantIDs)
		}
	})
}

// readIDsBody is the reference reading of a body of POST relations: the
// ids, or the error code the body must get.
func readIDsBody(body []byte) ([]followgraph.UserID, string) {
	if !json.Valid(body) {
		return nil, followgraph.EInvalidArgument
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top == nil || len(top) != 1 {
		return nil, followgraph.EInvalidArgument
	}
	var raw []json.RawMessage
	if json.Unmarshal(top["ids"], &raw) != nil || raw == nil {
		return nil, followgraph.EInvalidArgument
	}
	if len(raw) > followgraph.MaxRelationIDs {
		return nil, followgraph.EInvalidArgument
	}
	ids := make([]followgraph.UserID, len(raw))
	for i, r := range raw {
		var s string
		if bytes.Equal(r, []byte("null")) || json.Unmarshal(r, &s) != nil {
			return nil, followgraph.EInvalidID
		}
		id, err := followgraph.ParseUserID(s)
		if err != nil {
			return nil, followgraph.EInvalidID
		}
		ids[i] = id
	}
	return ids, ""
}

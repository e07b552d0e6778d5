package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/followgraph/followgraph"
)

// Parsing of what a request carries. Everything but cursors is checked
// here, before the graph is called: ids first (invalid_id wins over other
// errors, as in the engines), then counts and limits. Cursors are checked
// by the graph, which every engine does (see pageRequest).

// pathIDs returns the user ids in the path wildcards names, in that order.
func pathIDs(r *http.Request, names ...string) ([]followgraph.UserID, error) {
	ids := make([]followgraph.UserID, len(names))
	for i, name := range names {
		id, err := followgraph.ParseUserID(r.PathValue(name))
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// query returns the query parameters of r. A malformed query string, or a
// parameter given more than once, is invalid_argument.
func query(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, followgraph.Errorf(followgraph.EInvalidArgument, "malformed query string: %v", err)
	}
	for name, vs := range q {
		if len(vs) > 1 {
			return nil, followgraph.Errorf(followgraph.EInvalidArgument, "query parameter %q is given %d times: give it once", truncate(name), len(vs))
		}
	}
	return q, nil
}

// queryIDs parses the comma-separated ids of parameter "ids", at most max
// of them. Absent or empty is none.
func queryIDs(q url.Values, max int) ([]followgraph.UserID, error) {
	s := q.Get("ids")
	if s == "" {
		return []followgraph.UserID{}, nil
	}
	if n := strings.Count(s, ",") + 1; n > max {
		return nil, followgraph.TooManyIDs(n, max)
	}
	parts := strings.Split(s, ",")
	ids := make([]followgraph.UserID, len(parts))
	for i, p := range parts {
		id, err := followgraph.ParseUserID(p)
		if err != nil {
			return nil, followgraph.Errorf(followgraph.EInvalidID, "ids[%d]: %s", i, followgraph.ErrorMessage(err))
		}
		ids[i] = id
	}
	return ids, nil
}

// viewer returns the user id of parameter "viewer", and ok false when it
// is absent. Present but empty is invalid_id, the error naming viewer.
func viewer(q url.Values) (id followgraph.UserID, ok bool, err error) {
	vs, ok := q["viewer"]
	if !ok {
		return 0, false, nil
	}
	if id, err = followgraph.ParseUserID(vs[0]); err != nil {
		return 0, false, followgraph.Errorf(followgraph.EInvalidID, "viewer: %s", followgraph.ErrorMessage(err))
	}
	return id, true, nil
}

// limit returns the value of parameter "limit": 0 (the default) when it
// is absent, else an integer from 1 to followgraph.MaxLimit. Anything else,
// the empty string included, is invalid_argument.
func limit(q url.Values) (int, error) {
	vs, ok := q["limit"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(vs[0])
	if err != nil || n < 1 || n > followgraph.MaxLimit {
		return 0, followgraph.Errorf(followgraph.EInvalidArgument, "limit %q: it must be an integer from 1 to %d", truncate(vs[0]), followgraph.MaxLimit)
	}
	return n, nil
}

// pageRequest returns the page asked for by parameters "limit" and
// "cursor". The graph checks the cursor (every engine answers
// invalid_cursor for one not issued for that list, and a read changes
// nothing), so it is authenticated once per request, not twice.
func pageRequest(q url.Values) (followgraph.PageRequest, error) {
	n, err := limit(q)
	if err != nil {
		return followgraph.PageRequest{}, err
	}
	return followgraph.PageRequest{Limit: n, Cursor: q.Get("cursor")}, nil
}

// bodyIDs parses a body {"ids": ["1", "2", ...]} of at most max ids. A body
// that is not JSON, or not exactly that object, is invalid_argument; an id
// that is not a string holding a valid id is invalid_id; a body over
// MaxBodyBytes is too_large.
func bodyIDs(body io.Reader, max int) ([]followgraph.UserID, error) {
	const want = `{"ids": ["1", "2", ...]}`
	obj, err := bodyObject(body, want, false)
	if err != nil {
		return nil, err
	}
	list, isList := obj["ids"].([]any)
	if len(obj) != 1 || !isList {
		return nil, followgraph.Errorf(followgraph.EInvalidArgument, `the body must be an object with one field, ids, an array of strings: %s`, want)
	}
	if len(list) > max {
		return nil, followgraph.TooManyIDs(len(list), max)
	}
	ids := make([]followgraph.UserID, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, followgraph.Errorf(followgraph.EInvalidID, "ids[%d] is a JSON %s: ids in JSON are strings, such as \"42\"", i, jsonKind(x))
		}
		id, err := followgraph.ParseUserID(s)
		if err != nil {
			return nil, followgraph.Errorf(followgraph.EInvalidID, "ids[%d]: %s", i, followgraph.ErrorMessage(err))
		}
		ids[i] = id
	}
	return ids, nil
}

// muteUnits are the fields of a mute's body, each a duration in its unit:
// duration_seconds, as docs/API.md has it, and duration_ms, for the
// precision of the API's times.
var muteUnits = map[string]time.Duration{"duration_seconds": time.Second, "duration_ms": time.Millisecond}

// bodyMute parses the optional body of a mute, {"duration_seconds": N} or
// {"duration_ms": N}: no body, {} and 0 are until unmuted; N must be an
// integer from 0 to followgraph.MaxMute in its unit. Anything else is
// invalid_argument; a body over MaxBodyBytes is too_large.
func bodyMute(body io.Reader) (time.Duration, error) {
	const want = `{"duration_seconds": 3600}, {"duration_ms": 1500}, or no body`
	obj, err := bodyObject(body, want, true)
	if err != nil {
		return 0, err
	}
	var d time.Duration // none: until unmuted
	for name, x := range obj {
		unit, ok := muteUnits[name]
		if len(obj) > 1 || !ok {
			return 0, followgraph.Errorf(followgraph.EInvalidArgument, "the body must be an object with at most one field, duration_seconds or duration_ms: %s", want)
		}
		num, isNum := x.(json.Number)
		n, err := strconv.ParseInt(string(num), 10, 64)
		if !isNum || err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, followgraph.Errorf(followgraph.EInvalidArgument, "%s is %s: it must be an integer", name, jsonValue(x))
		}
		if max := int64(followgraph.MaxMute / unit); err != nil || n < 0 || n > max {
			return 0, followgraph.Errorf(followgraph.EInvalidArgument, "%s %s is out of range: it must be 0 (until unmuted) or up to %d (about 100 years)", name, truncate(string(num)), max)
		}
		d = time.Duration(n) * unit
	}
	return d, nil
}

// bodySettings parses the body {"private": true} of PUT .../settings. A
// body that is not exactly that object (with true or false) is
// invalid_argument; a body over MaxBodyBytes is too_large.
func bodySettings(body io.Reader) (private bool, err error) {
	const want = `{"private": true}`
	obj, err := bodyObject(body, want, false)
	if err != nil {
		return false, err
	}
	private, ok := obj["private"].(bool)
	if len(obj) != 1 || !ok {
		return false, followgraph.Errorf(followgraph.EInvalidArgument, "the body must be an object with one field, private, true or false: %s", want)
	}
	return private, nil
}

// bodyState parses the body {"state": "deactivated"} of PUT .../state:
// one of the four words of followgraph.State. A body that is not exactly
// that object, or another word, is invalid_argument; a body over
// MaxBodyBytes is too_large.
func bodyState(body io.Reader) (followgraph.State, error) {
	const want = `{"state": "deactivated"} (or "active", "suspended", "deleted")`
	obj, err := bodyObject(body, want, false)
	if err != nil {
		return 0, err
	}
	word, ok := obj["state"].(string)
	if len(obj) != 1 || !ok {
		return 0, followgraph.Errorf(followgraph.EInvalidArgument, "the body must be an object with one field, state, a string: %s", want)
	}
	st, ok := followgraph.ParseState(word)
	if !ok {
		return 0, followgraph.Errorf(followgraph.EInvalidArgument, "unknown state %q: want active, deactivated, suspended or deleted", truncate(word))
	}
	return st, nil
}

// bodyObject decodes a body that holds one JSON object, numbers as
// json.Number; want, an example of the body, goes into the error of one
// that does not. An empty body is nil when optional, else
// invalid_argument; a body over MaxBodyBytes is too_large.
func bodyObject(body io.Reader, want string, optional bool) (map[string]any, error) {
	dec := json.NewDecoder(body)
	dec.UseNumber() // so that a number too large for a float64 is still a number
	var v any
	err := dec.Decode(&v)
	if err == nil {
		if _, err = dec.Token(); err == io.EOF {
			err = nil
		} else if err == nil {
			err = errors.New("more data after the JSON object")
		}
	}
	switch {
	case err == io.EOF && optional:
		return nil, nil
	case errors.As(err, new(*http.MaxBytesError)):
		return nil, &followgraph.Error{Code: followgraph.ETooLarge, Message: tooLargeMessage}
	case err == io.EOF:
		err = errors.New("the body is empty")
	}
	if err != nil {
		return nil, followgraph.Errorf(followgraph.EInvalidArgument, `malformed body: %v; want %s`, err, want)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, followgraph.Errorf(followgraph.EInvalidArgument, "the body is a JSON %s: want an object, %s", jsonKind(v), want)
	}
	return obj, nil
}

// jsonValue names a value decoded from JSON for an error message: a
// number as it was written, anything else by its kind.
func jsonValue(v any) string {
	if n, ok := v.(json.Number); ok {
		return truncate(string(n))
	}
	return "a JSON " + jsonKind(v)
}

// jsonKind names the kind of a value decoded from JSON with UseNumber.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "string"
}

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// spec is api/openapi.yaml, loaded and validated, with memos of the
// verdicts it already gave.
//
// The memos exist because kin-openapi compiles a JSON Schema 2020-12
// validator for every value it validates in an OpenAPI 3.1 document (about
// a millisecond each), and the conformance suite makes over 100000
// requests, most of them the same as an earlier one but for the values of
// ids, times and cursors. An exchange is checked once per class of
// exchanges that conform or not together: see canonicalRequest and
// canonicalBody, and checkCanonicalizable, which makes sure that the
// document constrains values only in ways that those functions preserve.
type spec struct {
	doc       *openapi3.T
	requests  sync.Map // canonical request → requestVerdict
	responses sync.Map // canonical answer → struct{}, for answers that conform
}

type requestVerdict struct{ err error }

var loadSpec = sync.OnceValues(func() (*spec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../api/openapi.yaml")
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	if err := checkCanonicalizable(doc); err != nil {
		return nil, err
	}
	return &spec{doc: doc}, nil
})

func specOf(tb testing.TB) *spec {
	tb.Helper()
	s, err := loadSpec()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// specOptions are the options of every check against the document.
//
// Whether a request needs a token, and which, depends on how the server is
// configured, which the document cannot know: authentication applies only
// when the server has it, and most servers of the tests have none. So the
// check of a request takes any credentials or none (AuthenticationFunc), and
// what the document says of authentication is checked on the answers: a 401
// or 403 must be one that the operation lists, a 401 with its
// WWW-Authenticate header (see spec.check), and TestOpenAPI_Security checks
// what each operation declares.
var specOptions = &openapi3filter.Options{
	IncludeResponseStatus: true, // a status the document does not list is a mismatch
	SkipSettingDefaults:   true, // leave the request as the client sent it
	MultiError:            true,
	AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
}

// match returns the path of the document that the escaped path p is an
// instance of, with the values of its parameters. A parameter matches one
// whole segment, which is unescaped. A path that is not in canonical form
// (empty, "." or ".." segments) matches nothing, as on the server.
func (s *spec) match(p string) (string, *openapi3.PathItem, map[string]string) {
	segs := strings.Split(p, "/")
	if segs[0] != "" {
		return "", nil, nil
	}
	segs = segs[1:]
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." {
			return "", nil, nil
		}
	}
	for tmpl, item := range s.doc.Paths.Map() {
		tsegs := strings.Split(tmpl, "/")[1:]
		if len(tsegs) != len(segs) {
			continue
		}
		params := make(map[string]string)
		for i, ts := range tsegs {
			if strings.HasPrefix(ts, "{") && strings.HasSuffix(ts, "}") {
				v, err := url.PathUnescape(segs[i])
				if err != nil {
					break
				}
				params[ts[1:len(ts)-1]] = v
			} else if ts != segs[i] {
				break
			}
			if i == len(tsegs)-1 {
				return tmpl, item, params
			}
		}
	}
	return "", nil, nil
}

// verdict is what the document says about one exchange.
type verdict struct {
	found      bool  // the request is an operation of the document
	requestErr error // why the document rejects the request, if it does
}

// check checks one exchange against the document: the request (whose body,
// if any, is reqBody) and the answer. It returns what the document says of
// the request, and an error when the answer does not conform. For a
// request that is an operation of the document, the answer must be one it
// lists (a 401 with a Bearer challenge in WWW-Authenticate), and a request
// it rejects must be answered 400 or 413 (or 401 or 403: a server with
// authentication may refuse a request for its token before it reads it). A
// request whose path is not in the document must be answered 404; one
// whose path is there without its method must be answered 405 with an
// Allow header naming the methods of the document, and HEAD with GET;
// either may instead be 401 unauthenticated under /v1/.
func (s *spec) check(ctx context.Context, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) (verdict, error) {
	what := req.Method + " " + req.URL.String()
	tmpl, item, params := s.match(req.URL.EscapedPath())
	var op *openapi3.Operation
	if item != nil {
		op = item.GetOperation(req.Method)
		if req.Method == http.MethodHead {
			op = item.Get // net/http answers HEAD as GET, without the body
		}
	}
	if op == nil {
		if ct := header.Get("Content-Type"); ct != "application/json" {
			return verdict{}, fmt.Errorf("%s: Content-Type %q, want application/json", what, ct)
		}
		if status == http.StatusUnauthorized && strings.HasPrefix(req.URL.EscapedPath(), "/v1/") {
			// Every request under /v1/ needs a token when the server has
			// authentication (docs/API.md), so it may refuse one before
			// it routes it.
			if err := checkChallenge(what, header); err != nil {
				return verdict{}, err
			}
			return verdict{}, s.checkSchema(body, "Error", "UnauthenticatedCode")
		}
		if item == nil {
			if status != http.StatusNotFound {
				return verdict{}, fmt.Errorf("%s: no path of api/openapi.yaml, but answered %d", what, status)
			}
			return verdict{}, s.checkSchema(body, "Error", "NotFoundCode")
		}
		var allow []string
		for m := range item.Operations() {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
		slices.Sort(allow)
		if want := strings.Join(allow, ", "); status != http.StatusMethodNotAllowed || header.Get("Allow") != want {
			return verdict{}, fmt.Errorf("%s: api/openapi.yaml has %s with methods %s only, but the answer is %d with Allow %q",
				what, tmpl, want, status, header.Get("Allow"))
		}
		if req.Method == http.MethodHead {
			return verdict{}, nil // a path with no GET: a 405 without its body
		}
		return verdict{}, s.checkSchema(body, "Error", "MethodNotAllowedCode")
	}

	r := req.Clone(ctx)
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(reqBody)), nil }
	r.ContentLength = int64(len(reqBody))
	route := &routers.Route{Spec: s.doc, Path: tmpl, PathItem: item, Method: req.Method, Operation: op}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: specOptions}
	v := verdict{found: true}

	reqKey := strings.Join([]string{req.Method, canonicalRequest(req.URL), req.Header.Get("Content-Type"), canonicalBody(reqBody)}, "\n")
	if rv, ok := s.requests.Load(reqKey); ok {
		v.requestErr = rv.(requestVerdict).err
	} else {
		v.requestErr = openapi3filter.ValidateRequest(ctx, in)
		s.requests.Store(reqKey, requestVerdict{v.requestErr})
	}

	respKey := strings.Join([]string{req.Method, tmpl, fmt.Sprint(status),
		header.Get("Content-Type"), header.Get("Retry-After"), header.Get("WWW-Authenticate"), canonicalBody(body)}, "\n")
	if _, ok := s.responses.Load(respKey); !ok {
		out := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in,
			Status:                 status,
			Header:                 header,
			Options:                specOptions,
		}
		out.SetBodyBytes(body)
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			return v, fmt.Errorf("%s answered %d %s: the answer does not conform to api/openapi.yaml: %w", what, status, body, err)
		}
		s.responses.Store(respKey, struct{}{})
	}
	if status == http.StatusUnauthorized {
		if err := checkChallenge(what, header); err != nil {
			return v, err
		}
	}
	// A request the document rejects is refused: as invalid, or, when the
	// server has authentication, for its token before the server reads it.
	refused := status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge ||
		status == http.StatusUnauthorized || status == http.StatusForbidden
	if v.requestErr != nil && !refused {
		return v, fmt.Errorf("%s: api/openapi.yaml rejects the request (%w), but the server answered %d %s", what, v.requestErr, status, body)
	}
	return v, nil
}

// checkChallenge returns an error unless the WWW-Authenticate header of a
// 401 is the challenge of the bearer scheme: "Bearer" alone or followed by
// its parameters (RFC 6750 section 3; the scheme's name is
// case-insensitive).
func checkChallenge(what string, header http.Header) error {
	challenge := header.Get("WWW-Authenticate")
	if scheme, _, _ := strings.Cut(challenge, " "); !strings.EqualFold(scheme, "Bearer") {
		return fmt.Errorf("%s answered 401 with WWW-Authenticate %q, want a Bearer challenge (RFC 6750 section 3)", what, challenge)
	}
	return nil
}

// checkSchema checks body against every one of the named component schemas.
func (s *spec) checkSchema(body []byte, names ...string) error {
	key := strings.Join(append(names, canonicalBody(body)), "\n")
	if _, ok := s.responses.Load(key); ok {
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("body %q is not JSON: %w", body, err)
	}
	for _, name := range names {
		ref := s.doc.Components.Schemas[name]
		if ref == nil {
			return fmt.Errorf("api/openapi.yaml has no schema %s", name)
		}
		if err := ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			return fmt.Errorf("body %s does not match schema %s: %w", body, name, err)
		}
	}
	s.responses.Store(key, struct{}{})
	return nil
}

// The canonical forms of values that conform or not together.
const (
	idPattern     = `^[1-9][0-9]{0,18}$`
	timePattern   = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$`
	canonicalID   = "1"
	canonicalTime = "2000-01-01T00:00:00.000Z"
	canonicalText = "text"
)

var (
	idString   = regexp.MustCompile(idPattern)
	timeString = regexp.MustCompile(timePattern)
)

// canonicalString returns the canonical form of a string in a JSON body:
// an id becomes canonicalID, a valid time canonicalTime, and any other
// string that is not empty and not among the enum or const values of the
// document (which checkCanonicalizable keeps apart from the three)
// canonicalText. The document constrains strings only with the UserID and
// Time patterns, the date-time format next to the Time pattern, enums and
// consts, and minLength 1; under each, s and its canonical form conform
// or not together.
func canonicalString(s string, keep map[string]bool) string {
	switch {
	case s == "" || keep[s]:
		return s
	case idString.MatchString(s):
		return canonicalID
	case timeString.MatchString(s):
		if _, err := time.Parse(time.RFC3339, s); err == nil {
			return canonicalTime
		}
	}
	return canonicalText
}

// enumValues are the string values of the enums and consts of the document.
var enumValues = map[string]bool{}

// canonicalBody returns the canonical form of JSON body b: the same JSON
// with every string in canonical form, or b itself when it is not JSON.
func canonicalBody(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return "raw:" + string(b)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			return canonicalString(v, enumValues)
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		case map[string]any:
			for k := range v {
				v[k] = walk(v[k])
			}
		}
		return v
	}
	c, err := json.Marshal(walk(v))
	if err != nil {
		return "raw:" + string(b)
	}
	return "json:" + string(c)
}

// canonicalRequest returns the canonical form of the path and query of a
// request: path segments that are ids become canonicalID (every path
// parameter of the document is a UserID), and so do the ids of query
// parameters ids and viewer; a cursor that is not empty becomes
// canonicalText (its schema is any string). Other parameters are kept.
func canonicalRequest(u *url.URL) string {
	segs := strings.Split(u.EscapedPath(), "/")
	for i, seg := range segs {
		if idString.MatchString(seg) {
			segs[i] = canonicalID
		}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return u.RequestURI()
	}
	for name, vs := range q {
		for i, v := range vs {
			switch name {
			case "ids":
				ids := strings.Split(v, ",")
				for j, id := range ids {
					if idString.MatchString(id) {
						ids[j] = canonicalID
					}
				}
				vs[i] = strings.Join(ids, ",")
			case "viewer":
				if idString.MatchString(v) {
					vs[i] = canonicalID
				}
			case "cursor":
				if v != "" {
					vs[i] = canonicalText
				}
			}
		}
	}
	return strings.Join(segs, "/") + "?" + q.Encode()
}

// checkCanonicalizable returns an error unless the document constrains
// values only in the ways canonicalBody and canonicalRequest preserve, and
// collects its enum and const strings into enumValues.
func checkCanonicalizable(doc *openapi3.T) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("api/openapi.yaml: "+format+"; the memos of spec.check do not know it: update the canonical forms", args...)
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				if err := walk(x); err != nil {
					return err
				}
			}
		case map[string]any:
			if p, ok := v["pattern"]; ok && p != idPattern && p != timePattern {
				return fail("pattern %v", p)
			}
			if f, ok := v["format"]; ok && f != "int64" && (f != "date-time" || v["pattern"] != timePattern) {
				return fail("format %v", f)
			}
			if _, ok := v["maxLength"]; ok {
				return fail("maxLength")
			}
			if n, ok := v["minLength"]; ok && n != 1.0 {
				return fail("minLength %v", n)
			}
			for _, k := range []string{"enum", "const"} {
				x, ok := v[k]
				if !ok {
					continue
				}
				values, _ := x.([]any)
				if k == "const" {
					values = []any{x}
				}
				for _, e := range values {
					s, ok := e.(string)
					if !ok {
						continue
					}
					if s == "" || idString.MatchString(s) || timeString.MatchString(s) || s == canonicalText {
						return fail("%s value %q", k, s)
					}
					enumValues[s] = true
				}
			}
			for _, x := range v {
				if err := walk(x); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(v); err != nil {
		return err
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, p := range append(item.Parameters, op.Parameters...) {
				param, schema := p.Value, p.Value.Schema.Value
				isID := schema.Pattern == idPattern
				switch {
				case param.In == "path" && isID:
				case param.In == "query" && param.Name == "ids" && schema.Items != nil && schema.Items.Value.Pattern == idPattern:
				case param.In == "query" && param.Name == "viewer" && isID:
				case param.In == "query" && param.Name == "cursor" && schema.Type.Is("string") && schema.Pattern == "" && schema.MinLength == 0 && schema.MaxLength == nil:
				case param.In == "query" && param.Name != "ids" && param.Name != "viewer" && param.Name != "cursor" && !schema.Type.Is("string"):
				default:
					return fail("parameter %s in %s", param.Name, param.In)
				}
			}
		}
	}
	return nil
}

// specTransport is an http.RoundTripper that checks every exchange it
// carries against api/openapi.yaml, and fails tb on any mismatch.
type specTransport struct {
	tb   testing.TB
	spec *spec
	next http.RoundTripper
}

func (t *specTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		var err error
		if reqBody, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	v, err := t.spec.check(req.Context(), req, reqBody, resp.StatusCode, resp.Header, body)
	if err == nil && !v.found {
		err = fmt.Errorf("%s %s: the client sent a request that is no operation of api/openapi.yaml", req.Method, req.URL)
	}
	if err != nil {
		t.tb.Error(err)
	}
	return resp, nil
}
